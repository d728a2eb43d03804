package lambdafn

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// HTTPHandler is the Lambda handler of an HTTP function: API Gateway HTTP
// API events in payload format 2.0.
type HTTPHandler func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// HTTP returns the handler serving the server's API for the given methods
// (WriteMethods for produce, ReadMethods for fetch); everything else is
// refused by the route filter (routes.go).
func (f *Function) HTTP(methods ...string) HTTPHandler {
	adapter := newAdapter(f.name, methods, f.srv.Handler())
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		var resp events.APIGatewayV2HTTPResponse
		err := f.invoke(ctx, func(ctx context.Context, inv *invocation) error {
			var err error
			resp, err = adapter.ProxyWithContext(ctx, ev)
			if err != nil {
				// The event itself is malformed (a body that is not
				// base64, a path that is no URL): the client's fault.
				f.log.WarnContext(ctx, "bad API Gateway event", "err", err)
				resp, err = badEvent(err), nil
			}
			// Before answering: nothing runs after the response.
			if keys := f.rolls.take(); len(keys) > 0 && f.notifier != nil {
				n := notify(ctx, f.notifier, f.env.NotifyTimeout, keys, f.log)
				inv.metrics = snapshot{"CompactorNotifications": {float64(n), unitCount}}
			}
			method := ev.RequestContext.HTTP.Method
			path := ev.RawPath
			if path == "" {
				path = ev.RequestContext.HTTP.Path
			}
			if f.waker != nil && method == http.MethodPost && resp.StatusCode == http.StatusOK && strings.HasSuffix(path, "/records") {
				f.wakeDeliverer(ctx, inv)
			}
			inv.properties["method"] = method
			inv.properties["path"] = path
			inv.properties["status"] = resp.StatusCode
			annotate(ctx, map[string]any{"method": method, "status": resp.StatusCode})
			if resp.StatusCode >= http.StatusInternalServerError {
				inv.metrics = addCount(inv.metrics, "Status5xx")
			} else if resp.StatusCode >= http.StatusBadRequest {
				inv.metrics = addCount(inv.metrics, "Status4xx")
			}
			return err
		})
		return resp, err
	}
}

// newAdapter is what an HTTP function puts between API Gateway's events
// and the server's handler h: the route filter, then h (which takes paths
// literally: no ".." or "//" is ever cleaned into a redirect).
func newAdapter(function string, methods []string, h http.Handler) *httpadapter.HandlerAdapterV2 {
	return httpadapter.NewV2(&routeFilter{function: function, methods: methods, next: h})
}

func addCount(s snapshot, name string) snapshot {
	if s == nil {
		s = snapshot{}
	}
	s[name] = counter{s[name].v + 1, unitCount}
	return s
}

// badEvent answers an event the adapter cannot turn into a request.
func badEvent(err error) events.APIGatewayV2HTTPResponse {
	body, _ := json.Marshal(map[string]any{"error": map[string]string{
		"code": "invalid_request", "message": "malformed request: " + err.Error()}})
	return events.APIGatewayV2HTTPResponse{
		StatusCode: http.StatusBadRequest,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(body) + "\n",
	}
}
