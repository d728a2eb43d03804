// Command minimal is the floor for cold-start measurements: aws-lambda-go
// answering API Gateway v2 events with a constant, nothing of tierlog.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func main() {
	lambda.Start(func(context.Context, events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: `{"status":"ok"}`,
			Headers: map[string]string{"Content-Type": "application/json"}}, nil
	})
}
