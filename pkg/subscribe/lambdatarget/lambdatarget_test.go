package lambdatarget

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
)

type answer struct {
	out *lambda.InvokeOutput
	in  *lambda.InvokeInput
}

func (a *answer) Invoke(_ context.Context, in *lambda.InvokeInput, _ ...func(*lambda.Options)) (*lambda.InvokeOutput, error) {
	a.in = in
	return a.out, nil
}

// A function error fails the batch, whether Lambda flags it with
// X-Amz-Function-Error or (as the Runtime Interface Emulator does) only the
// payload is the runtime's error document; any other payload is the answer.
func TestFunctionErrors(t *testing.T) {
	for _, tc := range []struct {
		payload string
		flag    *string
		fails   bool
	}{
		{`{"batchItemFailures":[]}`, nil, false},
		{``, nil, false},
		{`null`, nil, false},
		{`{"errorMessage":"boom","errorType":"errorString"}`, nil, true},
		{`{"errorMessage":"boom","errorType":"x","stackTrace":[]}`, nil, true},
		{`{"errorMessage":"boom","errorType":"x","result":1}`, nil, false},
		{`{"ok":true}`, aws.String("Unhandled"), true},
	} {
		a := &answer{out: &lambda.InvokeOutput{Payload: []byte(tc.payload), FunctionError: tc.flag}}
		body, err := New(a, "fn").Invoke(context.Background(), []byte(`{"records":{}}`))
		if (err != nil) != tc.fails {
			t.Errorf("payload %s flag %v: err %v, want failure %v", tc.payload, tc.flag, err, tc.fails)
		}
		if err == nil && string(body) != tc.payload {
			t.Errorf("payload %s: answer %s", tc.payload, body)
		}
		if *a.in.FunctionName != "fn" || a.in.InvocationType != "RequestResponse" || string(a.in.Payload) != `{"records":{}}` {
			t.Errorf("invoke input %+v", a.in)
		}
	}
}
