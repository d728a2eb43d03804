package bench

import (
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

// TestCostArithmetic pins the cost model against a hand computation.
func TestCostArithmetic(t *testing.T) {
	u := usage{
		Requests: 1000, BodyBytes: 1000 * 1200, LambdaSeconds: 47,
		DDBWriteUnits: 2000, EFSWriteBytes: 1000 * 4096, EFSReadBytes: 1000 * 8192,
		S3Puts: 3, S3Gets: 1, CompactorCalls: 1, CompactorSeconds: 2,
	}
	b := listPrices.cost(u, 1024)
	// By hand, at 1 GB of memory:
	//   Lambda   (1000 + 1) invocations x $0.20/M = 0.0002002
	//            (47 + 2) s x 1 GB x $0.0000133334 = 0.0006533366
	//   API GW   1000 requests (1,200 B each: one 512 KB unit) x $1/M = 0.001
	//   DynamoDB 2000 WRU x $0.625/M = 0.00125
	//   EFS      4,096,000 B / 2^30 x $0.06 + 8,192,000 B / 2^30 x $0.03
	//            = 0.0002288818359375 + 0.0002288818359375
	//   S3       3 x $0.005/1000 + 1 x $0.0004/1000 = 0.0000154
	want := bill{Lambda: 0.0002002 + 0.0006533366, APIGateway: 0.001, DynamoDB: 0.00125,
		EFS: 0.000457763671875, S3: 0.0000154}
	if !near(b.Lambda, want.Lambda) || !near(b.APIGateway, want.APIGateway) || !near(b.DynamoDB, want.DynamoDB) ||
		!near(b.EFS, want.EFS) || !near(b.S3, want.S3) || !near(b.Total(), 0.003576700271875) {
		t.Errorf("cost = %+v (total %v), want %+v (total 0.003576700271875)", b, b.Total(), want)
	}
	// Half the memory halves the duration part only.
	if h := listPrices.cost(u, 512); !near(h.Lambda, 0.0002002+0.0006533366/2) {
		t.Errorf("at 512 MB: Lambda %v, want %v", h.Lambda, 0.0002002+0.0006533366/2)
	}
	// A 600 KB body is two API Gateway requests.
	u.BodyBytes = 1000 * 600 << 10
	if g := listPrices.cost(u, 1024); !near(g.APIGateway, 0.002) {
		t.Errorf("600 KB bodies: API Gateway %v, want 0.002", g.APIGateway)
	}
	// perRequest and scaled are inverse.
	one := u.perRequest()
	if one.Requests != 1 || !near(one.LambdaSeconds, 0.047) || !near(one.S3Puts, 0.003) {
		t.Errorf("perRequest: %+v", one)
	}
	if back := one.scaled(1000); !near(back.EFSReadBytes, u.EFSReadBytes) || !near(back.CompactorSeconds, 2) {
		t.Errorf("scaled back: %+v", back)
	}
}

// TestKinesisMonth pins the Kinesis side against a hand computation: 1 and
// 10 MB/s (10^6 B/s) of 1 KiB records, 730 hours, one reader.
func TestKinesisMonth(t *testing.T) {
	// 1 MB/s: 976.5625 records/s; 2.628e12 B a month = 2447.504997253418 GB.
	//   on demand: 730 x $0.04 + 2447.504997253418 GB x ($0.08 + $0.04 read)
	//   provisioned: 1 shard (1e6 B/s < 1 MiB/s, 977 records/s < 1000)
	//   x 730 h x $0.015, plus 976.5625 x 2,628,000 PUT units x $0.014/M.
	gb := 2.628e12 / (1 << 30)
	od, prov := listPrices.kinesisMonth(1, 1024, 1)
	if !near(od, 29.2+gb*0.12) || !near(prov, 10.95+976.5625*2628000*0.014/1e6) {
		t.Errorf("1 MB/s: on demand %v, provisioned %v; want %v, %v", od, prov, 29.2+gb*0.12, 10.95+35.9296875)
	}
	// 10 MB/s: 10 shards (9.54 MiB/s, 9,766 records/s).
	od, prov = listPrices.kinesisMonth(10, 1024, 0)
	if !near(od, 29.2+10*gb*0.08) || !near(prov, 109.5+359.296875) {
		t.Errorf("10 MB/s: on demand %v, provisioned %v; want %v, %v", od, prov, 29.2+10*gb*0.08, 468.796875)
	}
	// A 100-byte record is billed as 1 KB on demand, and is one PUT unit.
	od, _ = listPrices.kinesisMonth(1, 100, 0)
	if want := 29.2 + 1e4*1024*2628000/(1<<30)*0.08; !near(od, want) {
		t.Errorf("100 B records on demand: %v, want %v", od, want)
	}
}

// TestCostDocPrices: docs/cost.md's price table gives every price of
// listPrices, in the units it uses, and nothing else.
func TestCostDocPrices(t *testing.T) {
	b, err := os.ReadFile("../../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	v := reflect.ValueOf(listPrices)
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		row := ""
		for _, line := range strings.Split(doc, "\n") {
			if strings.Contains(line, "`"+name+"`") {
				row = line
				break
			}
		}
		if row == "" {
			t.Errorf("docs/cost.md has no price row naming `%s`", name)
			continue
		}
		if want := docPrice(v.Field(i).Float()); !strings.Contains(row, want) {
			t.Errorf("docs/cost.md: `%s` row %q does not say %s", name, row, want)
		}
	}
}

// docPrice is how docs/cost.md writes a price: per million when under a
// tenth of a cent, else as it is.
func docPrice(p float64) string {
	trim := func(x float64) string { return strconv.FormatFloat(math.Round(x*1e6)/1e6, 'f', -1, 64) }
	if p < 1e-3 {
		return "$" + trim(p*1e6) + " per million"
	}
	return "$" + trim(p)
}
