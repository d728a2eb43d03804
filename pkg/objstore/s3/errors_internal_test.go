package s3

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// sdkErr builds the error shape the SDK returns: an OperationError around
// an HTTP ResponseError around the API error.
func sdkErr(status int, apiErr error) error {
	return &smithy.OperationError{
		ServiceID:     "S3",
		OperationName: "Op",
		Err: &awshttp.ResponseError{
			ResponseError: &smithyhttp.ResponseError{
				Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
				Err:      apiErr,
			},
			RequestID: "req",
		},
	}
}

func generic(code string) error { return &smithy.GenericAPIError{Code: code, Message: "m"} }

func TestTranslate(t *testing.T) {
	cases := []struct {
		name string
		op   objstore.Op
		err  error
		want error // nil: none of objstore's sentinels
	}{
		{"NoSuchKey", objstore.OpGet, sdkErr(404, &types.NoSuchKey{}), objstore.ErrNotFound},
		{"HEAD NotFound", objstore.OpHead, sdkErr(404, &types.NotFound{}), objstore.ErrNotFound},
		{"bare 404", objstore.OpGet, sdkErr(404, generic("")), objstore.ErrNotFound},
		{"NoSuchBucket", objstore.OpGet, sdkErr(404, generic("NoSuchBucket")), nil},
		{"InvalidRange", objstore.OpGet, sdkErr(416, generic("InvalidRange")), objstore.ErrRange},
		{"bare 416", objstore.OpGet, sdkErr(416, generic("")), objstore.ErrRange},
		{"412 on PutIfAbsent", objstore.OpPutIfAbsent, sdkErr(412, generic("PreconditionFailed")), objstore.ErrExists},
		{"bare 412 on PutIfAbsent", objstore.OpPutIfAbsent, sdkErr(412, generic("")), objstore.ErrExists},
		{"409 conflict on PutIfAbsent", objstore.OpPutIfAbsent, sdkErr(409, generic("ConditionalRequestConflict")), objstore.ErrExists},
		{"other 409 on PutIfAbsent", objstore.OpPutIfAbsent, sdkErr(409, generic("OperationAborted")), nil},
		{"412 on Put", objstore.OpPut, sdkErr(412, generic("PreconditionFailed")), nil},
		{"throttled", objstore.OpGet, sdkErr(503, generic("SlowDown")), nil},
		{"access denied", objstore.OpList, sdkErr(403, generic("AccessDenied")), nil},
		{"no HTTP at all", objstore.OpGet, errors.New("dial tcp: refused"), nil},
		{"already ours", objstore.OpGet, objstore.ErrRange, objstore.ErrRange},
	}
	sentinels := []error{objstore.ErrNotFound, objstore.ErrExists, objstore.ErrRange, objstore.ErrInvalidKey}
	for _, c := range cases {
		got := translate(c.op, "k", c.err)
		for _, s := range sentinels {
			if errors.Is(got, s) != (s == c.want) {
				t.Errorf("%s: translate = %v; errors.Is(%v) = %v", c.name, got, s, errors.Is(got, s))
			}
		}
		if !errors.Is(got, c.err) {
			t.Errorf("%s: the SDK error is not in the chain of %v", c.name, got)
		}
	}
	// Context errors stay visible.
	err := translate(objstore.OpGet, "k", &smithy.OperationError{Err: &smithy.CanceledError{Err: context.Canceled}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v does not wrap context.Canceled", err)
	}
}

func TestRetryConflict(t *testing.T) {
	if retryConflict(sdkErr(409, generic("ConditionalRequestConflict"))) != aws.TrueTernary {
		t.Error("409 ConditionalRequestConflict not retryable")
	}
	if retryConflict(sdkErr(412, generic("PreconditionFailed"))) != aws.UnknownTernary {
		t.Error("412 marked retryable")
	}
}
