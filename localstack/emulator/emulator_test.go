package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/tierlog/tierlog/localstack/emulator"
)

// start serves a new Emulator with opts on 127.0.0.1 for the test's
// lifetime and returns its endpoint URL.
func start(t *testing.T, opts emulator.Options) string {
	t.Helper()
	emu, err := emulator.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(emu) // binds 127.0.0.1
	t.Cleanup(func() {
		srv.Close()
		if err := emu.Close(); err != nil {
			t.Error(err)
		}
	})
	return srv.URL
}

var creds = credentials.NewStaticCredentialsProvider("test", "test", "")

// s3Client is a plain SDK client for the endpoint: path-style, checksums
// only when required (gofakes3 fails ranged GETs otherwise), no retries so
// failures show.
func s3Client(endpoint string) *s3.Client {
	return s3.New(s3.Options{
		Region:                     "us-east-1",
		BaseEndpoint:               aws.String(endpoint),
		Credentials:                creds,
		UsePathStyle:               true,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
		RetryMaxAttempts:           1,
	})
}

// ddbClient is a plain SDK client for the endpoint. It keeps the SDK's
// response CRC32 validation on (minidyn alone needs
// DisableValidateResponseChecksum; the emulator sets X-Amz-Crc32).
func ddbClient(endpoint string) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(endpoint),
		Credentials:      creds,
		RetryMaxAttempts: 1,
	})
}

var seq atomic.Int64

func unique(prefix string) string { return fmt.Sprintf("%s-%d", prefix, seq.Add(1)) }

func createBucket(t *testing.T, c *s3.Client) string {
	t.Helper()
	b := unique("bucket")
	if _, err := c.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(b)}); err != nil {
		t.Fatalf("CreateBucket: %v", err)
	}
	return b
}

func createTable(t *testing.T, c *dynamodb.Client) string {
	t.Helper()
	name := unique("table")
	_, err := c.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange},
		},
		BillingMode: ddbtypes.BillingModePayPerRequest,
	})
	if err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	return name
}

func putObject(t *testing.T, c *s3.Client, bucket, key, body string) {
	t.Helper()
	_, err := c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader(body)})
	if err != nil {
		t.Fatalf("PutObject %s: %v", key, err)
	}
}

func getObject(t *testing.T, c *s3.Client, bucket, key, rng string) string {
	t.Helper()
	in := &s3.GetObjectInput{Bucket: &bucket, Key: &key}
	if rng != "" {
		in.Range = &rng
	}
	out, err := c.GetObject(t.Context(), in)
	if err != nil {
		t.Fatalf("GetObject %s %s: %v", key, rng, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatalf("GetObject %s %s: reading body: %v", key, rng, err)
	}
	return string(b)
}

func item(pk, sk, v string) map[string]ddbtypes.AttributeValue {
	return map[string]ddbtypes.AttributeValue{
		"pk": &ddbtypes.AttributeValueMemberS{Value: pk},
		"sk": &ddbtypes.AttributeValueMemberS{Value: sk},
		"v":  &ddbtypes.AttributeValueMemberS{Value: v},
	}
}

// TestOneEndpoint drives both services through one URL with stock SDK
// clients.
func TestOneEndpoint(t *testing.T) {
	url := start(t, emulator.Options{})
	// Record what the SDK logs: a missing or wrong X-Amz-Crc32 shows up
	// only as a WARN line per call, not as an error.
	var logMu sync.Mutex
	var logged []string
	logger := logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		logged = append(logged, fmt.Sprintf(string(c)+" "+format, v...))
	})
	sc := s3Client(url)
	dc := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url), Credentials: creds, Logger: logger,
	})
	t.Cleanup(func() {
		logMu.Lock()
		defer logMu.Unlock()
		for _, l := range logged {
			t.Errorf("DynamoDB client logged: %s", l)
		}
	})
	ctx := t.Context()

	bucket := createBucket(t, sc)
	table := createTable(t, dc)

	// S3: put, get, ranged gets.
	putObject(t, sc, bucket, "3fa1/orders/p0007/00000000000000000000.seg", "0123456789")
	key := "3fa1/orders/p0007/00000000000000000000.seg"
	if got := getObject(t, sc, bucket, key, ""); got != "0123456789" {
		t.Fatalf("GET = %q", got)
	}
	for rng, want := range map[string]string{"bytes=2-4": "234", "bytes=7-": "789", "bytes=-3": "789"} {
		if got := getObject(t, sc, bucket, key, rng); got != want {
			t.Errorf("GET %s = %q, want %q", rng, got, want)
		}
	}
	// Put-if-absent is honoured.
	_, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: strings.NewReader("x"), IfNoneMatch: aws.String("*")})
	if code := apiCode(err); code != "PreconditionFailed" {
		t.Fatalf("PutObject If-None-Match over an object: %v, want PreconditionFailed", err)
	}

	// DynamoDB: conditional put, get, refused conditional put.
	cond := aws.String("attribute_not_exists(pk)")
	if _, err := dc.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item("topics", "t#orders", "one"), ConditionExpression: cond}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	_, err = dc.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &table, Item: item("topics", "t#orders", "two"), ConditionExpression: cond,
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional PutItem: %v, want ConditionalCheckFailedException", err)
	}
	out, err := dc.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &table, ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{
			"pk": &ddbtypes.AttributeValueMemberS{Value: "topics"},
			"sk": &ddbtypes.AttributeValueMemberS{Value: "t#orders"},
		},
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	if v, ok := out.Item["v"].(*ddbtypes.AttributeValueMemberS); !ok || v.Value != "one" {
		t.Fatalf("GetItem v = %#v, want \"one\"", out.Item["v"])
	}

	// Both services see their own resources only.
	lb, err := sc.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil || len(lb.Buckets) != 1 || aws.ToString(lb.Buckets[0].Name) != bucket {
		t.Fatalf("ListBuckets = %+v, %v", lb, err)
	}
	lt, err := dc.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil || len(lt.TableNames) != 1 || lt.TableNames[0] != table {
		t.Fatalf("ListTables = %+v, %v", lt, err)
	}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestHealth(t *testing.T) {
	url := start(t, emulator.Options{})
	resp, err := http.Get(url + emulator.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct{ Services map[string]string }
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || h.Services["s3"] != "running" || h.Services["dynamodb"] != "running" {
		t.Fatalf("health = %d %+v", resp.StatusCode, h)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	resp, err = http.Post(url+emulator.HealthPath, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST health = %d, want 405", resp.StatusCode)
	}
}

// post sends a raw JSON 1.0 request with the given X-Amz-Target.
func post(t *testing.T, url, target, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", target)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// Every DynamoDB answer, errors included, carries a matching X-Amz-Crc32.
func TestDynamoCRC(t *testing.T) {
	url := start(t, emulator.Options{})
	for _, tc := range []struct{ target, body string }{
		{"DynamoDB_20120810.ListTables", `{}`},
		{"DynamoDB_20120810.DescribeTable", `{"TableName":"missing"}`},
		{"DynamoDB_20120810.GetItem", `{"TableName":"missing","Key":{"pk":{"S":"a"}}}`},
		{"DynamoDB_20120810.NoSuchOperation", `{}`},
		{"DynamoDB_20120810.PutItem", `not json`},
	} {
		resp, body := post(t, url, tc.target, tc.body)
		crc, err := strconv.ParseUint(resp.Header.Get("X-Amz-Crc32"), 10, 32)
		if err != nil || uint32(crc) != crc32.ChecksumIEEE(body) {
			t.Errorf("%s: X-Amz-Crc32 %q for body %q (crc %d)", tc.target, resp.Header.Get("X-Amz-Crc32"), body, crc32.ChecksumIEEE(body))
		}
		if !json.Valid(body) {
			t.Errorf("%s: body is not JSON: %q", tc.target, body)
		}
	}
}

// Operations neither minidyn nor the emulator know, and other services'
// JSON targets, get a DynamoDB-shaped UnknownOperationException.
func TestUnknownOperations(t *testing.T) {
	url := start(t, emulator.Options{})
	dc := ddbClient(url)
	_, err := dc.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("t")})
	if code := apiCode(err); code != "UnknownOperationException" {
		t.Errorf("DescribeTimeToLive: %v (code %q), want UnknownOperationException", err, code)
	}
	resp, body := post(t, url, "AmazonSSM.GetParameter", `{"Name":"x"}`)
	if resp.StatusCode != http.StatusBadRequest || !bytes.Contains(body, []byte("UnknownOperationException")) {
		t.Errorf("SSM target: %d %s", resp.StatusCode, body)
	}
}

// ListTables pages in name order; the TableExists waiter finishes.
func TestListTablesAndWaiter(t *testing.T) {
	url := start(t, emulator.Options{})
	dc := ddbClient(url)
	ctx := t.Context()
	var names []string
	for range 5 {
		names = append(names, createTable(t, dc))
	}
	w := dynamodb.NewTableExistsWaiter(dc, func(o *dynamodb.TableExistsWaiterOptions) { o.MinDelay = 10 * time.Millisecond })
	if err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: &names[0]}, 5*time.Second); err != nil {
		t.Fatalf("TableExists waiter: %v", err)
	}
	if _, err := dc.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &names[4]}); err != nil {
		t.Fatal(err)
	}
	var got []string
	p := dynamodb.NewListTablesPaginator(dc, &dynamodb.ListTablesInput{Limit: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, out.TableNames...)
	}
	want := slices.Sorted(slices.Values(names[:4]))
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 2 {
		t.Fatalf("ListTables = %v in %d pages, want %v in 2", got, pages, want)
	}
	if _, err := dc.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(101)}); apiCode(err) != "ValidationException" {
		t.Errorf("ListTables Limit 101: %v", err)
	}
}

// Table operations racing item operations: minidyn's table map is
// unguarded there; under -race this fails without the emulator's lock.
func TestConcurrentTableAndItemOps(t *testing.T) {
	url := start(t, emulator.Options{})
	dc := ddbClient(url)
	ctx := t.Context()
	table := createTable(t, dc)
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := range 4 {
		wg.Go(func() {
			for i := range 10 {
				_, err := dc.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: item("p", fmt.Sprintf("%d-%d", g, i), "v")})
				if err != nil {
					errc <- err
					return
				}
			}
		})
		wg.Go(func() {
			for range 3 {
				name := unique("race")
				_, err := dc.CreateTable(ctx, &dynamodb.CreateTableInput{
					TableName:            &name,
					AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
					KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
					BillingMode:          ddbtypes.BillingModePayPerRequest,
				})
				if err == nil {
					_, err = dc.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
				}
				if err == nil {
					_, err = dc.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: &name})
				}
				if err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	out, err := dc.Query(ctx, &dynamodb.QueryInput{
		TableName: &table, KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":p": &ddbtypes.AttributeValueMemberS{Value: "p"}},
	})
	if err != nil || out.Count != 40 {
		t.Fatalf("Query after concurrent puts: %v items, %v", out, err)
	}
}

func TestCheckListenAddr(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		addr   string
		remote bool
		ok     bool
	}{
		{"127.0.0.1:4566", false, true},
		{"127.0.0.2:4566", false, true},
		{"[::1]:4566", false, true},
		{"localhost:4566", false, true},
		{":4566", false, false},
		{"0.0.0.0:4566", false, false},
		{"[::]:4566", false, false},
		{"192.0.2.1:4566", false, false},
		{"127.0.0.1", false, false}, // no port
		{"0.0.0.0:4566", true, true},
		{":4566", true, true},
	} {
		err := emulator.CheckListenAddr(ctx, tc.addr, tc.remote)
		if (err == nil) != tc.ok {
			t.Errorf("CheckListenAddr(%q, %v) = %v, want ok=%v", tc.addr, tc.remote, err, tc.ok)
		}
	}
}
