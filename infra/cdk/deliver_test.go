package main

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

const auditARN = "arn:aws:lambda:eu-west-1:123456789012:function:audit"

func deliverConfig() Config {
	cfg := DefaultConfig()
	cfg.DeliverTargets = "billing, " + auditARN
	return cfg
}

// TestDeliverFunction: with deliverTargets the stack has the delivery
// function, woken by produce and by a schedule, allowed to invoke exactly
// the targets named and nothing else; without it (the default) none.
func TestDeliverFunction(t *testing.T) {
	if ids := defaultStack(t).ofType("AWS::Lambda::Function"); len(ids) != 3 {
		t.Fatalf("default stack functions %v: want no delivery function without deliverTargets", ids)
	}
	s := newStack(t, deliverConfig(), false)
	check(t, "four functions", func() { s.tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(4)) })
	deliver := s.logicalID(t, "AWS::Lambda::Function", "Deliver")
	produce := s.logicalID(t, "AWS::Lambda::Function", "Produce")
	p := props(s.resources()[deliver])
	if p["Timeout"] != 300.0 || p["MemorySize"] != 1024.0 {
		t.Errorf("deliver timeout %v memory %v", p["Timeout"], p["MemorySize"])
	}
	vars := props(s.resources()[produce])["Environment"].(map[string]any)["Variables"].(map[string]any)
	if !reflect.DeepEqual(vars["TIERLOG_DELIVER_FUNCTION"], ref(deliver)) {
		t.Errorf("produce TIERLOG_DELIVER_FUNCTION = %v, want the delivery function", vars["TIERLOG_DELIVER_FUNCTION"])
	}

	grants, _ := s.grants(t, "Deliver")
	invoke := grants["lambda:InvokeFunction"]
	if len(invoke) != 2 || !slices.ContainsFunc(invoke, func(r string) bool { return strings.HasSuffix(r, ":function:billing]]]") }) ||
		!slices.Contains(invoke, "?"+auditARN) {
		t.Errorf("deliver may invoke %v, want exactly billing and %s", invoke, auditARN)
	}
	for a, rs := range grants {
		for _, r := range rs {
			if r == "*" && !strings.HasPrefix(a, "xray:") {
				t.Errorf("deliver: %s on every resource", a)
			}
		}
	}
	for _, a := range []string{"dynamodb:PutItem", "dynamodb:Query", "s3:GetObject", "elasticfilesystem:ClientWrite"} {
		if _, ok := grants[a]; !ok {
			t.Errorf("deliver lacks %s", a)
		}
	}
	for _, a := range []string{"s3:PutObject", "s3:DeleteObject", "elasticfilesystem:ClientRootAccess"} {
		if _, ok := grants[a]; ok {
			t.Errorf("deliver may %s", a)
		}
	}
	pg, _ := s.grants(t, "Produce")
	want := []string{"?" + fmt.Sprint(getAtt(deliver, "Arn")), "compactor"}
	got := append([]string(nil), pg["lambda:InvokeFunction"]...)
	sort.Strings(got)
	sort.Strings(want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("produce may invoke %v, want the compactor and the delivery function", got)
	}

	check(t, "deliver schedule", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
			"ScheduleExpression": "rate(1 minute)",
			"Targets":            assertions.Match_ArrayWith(&[]any{assertions.Match_ObjectLike(&map[string]any{"Arn": getAtt(deliver, "Arn")})}),
		})
	})
	endpoints := 0
	for _, id := range s.ofType("AWS::EC2::VPCEndpoint") {
		ep := props(s.resources()[id])
		if ep["VpcEndpointType"] != "Interface" {
			continue
		}
		endpoints++
		policy := fmt.Sprint(ep["PolicyDocument"])
		for _, want := range []string{deliver, auditARN, ":function:billing", "Compactor"} {
			if !strings.Contains(policy, want) {
				t.Errorf("the Lambda endpoint's policy does not admit %s: %s", want, policy)
			}
		}
	}
	if endpoints != 1 {
		t.Errorf("%d Lambda interface endpoints, want 1", endpoints)
	}
	check(t, "deliver output", func() {
		s.tpl.HasOutput(jsii.String("DeliverFunctionName"), map[string]any{"Value": ref(deliver)})
	})
	check(t, "deliver alarms", func() { s.tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(11)) })
}

// TestDeliverNag: the stack with the delivery function is cdk-nag clean,
// its role carrying the same narrow suppressions as the others.
func TestDeliverNag(t *testing.T) {
	s := newStack(t, deliverConfig(), true)
	ann := assertions.Annotations_FromStack(s.stack)
	for _, m := range *ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))) {
		t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
	}
	for _, m := range *ann.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning at %s: %v", *m.Id, m.Entry.Data)
	}
}

func TestDeliverConfig(t *testing.T) {
	for _, bad := range []map[string]any{
		{"deliverTargets": "fn-*"},
		{"deliverTargets": "a b"},
		{"deliverMemoryMB": "64"},
		{"deliverTimeoutSeconds": "901"},
	} {
		if _, err := ConfigFromContext(func(k string) any { return bad[k] }); err == nil {
			t.Errorf("context %v accepted", bad)
		}
	}
	cfg, err := ConfigFromContext(func(k string) any { return map[string]any{"deliverTargets": "a,,b "}[k] })
	if err != nil || !cfg.Deliver() || !reflect.DeepEqual(cfg.deliverTargets(), []string{"a", "b"}) {
		t.Errorf("deliverTargets a,,b: %v %v", cfg.deliverTargets(), err)
	}
}
