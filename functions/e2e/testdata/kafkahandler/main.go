// Command kafkahandler is a Lambda handler written for Lambda's Kafka event
// sources, as a user would write it for MSK: aws-lambda-go's
// events.KafkaEvent in, partial batch failures out. A record whose value is
// "poison" fails the first time the process sees it (a partial batch
// answer), one whose value is "boom" fails its whole invocation the first
// time (a function error); every record it
// handles is printed as a JSON line {"offset":N,"value":"..."} so a test
// can read what was delivered from the function's output.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

type failure struct {
	ItemIdentifier string `json:"itemIdentifier"`
}

type response struct {
	BatchItemFailures []failure `json:"batchItemFailures"`
}

func main() {
	failed := map[string]bool{} // the process is warm between invocations
	lambda.Start(func(_ context.Context, ev events.KafkaEvent) (response, error) {
		for _, recs := range ev.Records {
			for _, r := range recs {
				v, err := base64.StdEncoding.DecodeString(r.Value)
				if err != nil {
					return response{}, fmt.Errorf("value of offset %d: %w", r.Offset, err)
				}
				id := r.Topic + "-" + strconv.FormatInt(r.Partition, 10) + "-" + strconv.FormatInt(r.Offset, 10)
				if string(v) == "poison" && !failed[id] {
					failed[id] = true
					return response{BatchItemFailures: []failure{{ItemIdentifier: strconv.FormatInt(r.Offset, 10)}}}, nil
				}
				if string(v) == "boom" && !failed[id] {
					failed[id] = true
					return response{}, fmt.Errorf("boom at offset %d", r.Offset)
				}
				var hs []string
				for _, h := range r.Headers {
					for k, b := range h {
						hs = append(hs, k+"="+string(b))
					}
				}
				line, _ := json.Marshal(map[string]any{"offset": r.Offset, "value": string(v), "headers": hs, "partition": r.Partition})
				fmt.Fprintln(os.Stdout, string(line))
			}
		}
		return response{}, nil
	})
}
