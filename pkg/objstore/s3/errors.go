package s3

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/aws/smithy-go"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// S3 error codes the adapter translates.
const (
	codeNoSuchKey         = "NoSuchKey"
	codeNotFound          = "NotFound" // HEAD has no body, so no code: the SDK says NotFound
	codeNoSuchBucket      = "NoSuchBucket"
	codeInvalidRange      = "InvalidRange"
	codePrecondition      = "PreconditionFailed"
	codeConditionConflict = "ConditionalRequestConflict"
)

// translate maps an SDK error from op on key to objstore's errors, keeping
// the SDK error in the chain. Errors that are already objstore's pass
// through.
func translate(op objstore.Op, key string, err error) error {
	for _, sentinel := range []error{objstore.ErrNotFound, objstore.ErrExists, objstore.ErrRange, objstore.ErrInvalidKey} {
		if errors.Is(err, sentinel) {
			return err
		}
	}
	code, status := errorCode(err)
	switch {
	case code == codeNoSuchBucket:
		// A missing bucket is a setup error, not a missing object.
	case code == codeNoSuchKey || code == codeNotFound || status == http.StatusNotFound:
		return fmt.Errorf("%w: key %q: %w", objstore.ErrNotFound, key, err)
	case code == codeInvalidRange || status == http.StatusRequestedRangeNotSatisfiable:
		return fmt.Errorf("%w: key %q: %w", objstore.ErrRange, key, err)
	case op == objstore.OpPutIfAbsent && (code == codePrecondition || status == http.StatusPreconditionFailed):
		return fmt.Errorf("%w: key %q: %w", objstore.ErrExists, key, err)
	case op == objstore.OpPutIfAbsent && code == codeConditionConflict:
		// Another conditional write of the key was in flight and (after
		// the client's retries) still won: report what a caller can act on.
		return fmt.Errorf("%w: key %q: concurrent conditional write: %w", objstore.ErrExists, key, err)
	}
	return fmt.Errorf("objstore/s3: %s %q: %w", op, key, err)
}

// errorCode returns the API error code and HTTP status in err, if any.
func errorCode(err error) (code string, status int) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		code = ae.ErrorCode()
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}
