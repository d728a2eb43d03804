package lambdafn

import (
	"net/http"

	"github.com/awslabs/aws-lambda-go-api-proxy/core"
)

// iamAuthorized reports whether API Gateway authorized r with IAM: its
// payload 2.0 request context names an IAM caller. With TIERLOG_AUTH=tokens
// the stack keeps the token routes IAM-authorized and the functions admit
// such requests without a token: that is how the first admin token is
// made (docs/auth.md). The context comes from API Gateway's event, never
// from a request header, so a client cannot claim it; only a caller
// allowed to invoke the function directly could, and that caller is an
// IAM principal already.
func iamAuthorized(r *http.Request) bool {
	rc, ok := core.GetAPIGatewayV2ContextFromContext(r.Context())
	if !ok || rc.Authorizer == nil || rc.Authorizer.IAM == nil {
		return false
	}
	iam := rc.Authorizer.IAM
	return iam.UserARN != "" || iam.AccessKey != "" || iam.CallerID != ""
}
