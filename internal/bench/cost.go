package bench

import "math"

// prices are AWS list prices, us-east-1, in dollars: the cost model of
// docs/cost.md, which names each one's page and date. A price per request
// or per unit is in dollars per one (not per million).
type prices struct {
	LambdaRequest    float64 // per invocation
	LambdaGBSecond   float64 // per GB-second of duration, arm64
	HTTPAPIRequest   float64 // API Gateway HTTP API, per request (per 512 KB of it)
	RESTAPIRequest   float64 // API Gateway REST API, per request
	DynamoWriteUnit  float64 // on-demand write request unit (1 KB written)
	DynamoReadUnit   float64 // on-demand read request unit (a consistent read of 4 KB)
	EFSWriteGB       float64 // Elastic throughput, per GB written
	EFSReadGB        float64 // Elastic throughput, per GB read
	EFSStorageGBMo   float64 // Standard storage, per GB-month
	EFSProvMBsMonth  float64 // Provisioned throughput, per MB/s-month
	S3PutRequest     float64 // PUT, COPY, POST, LIST: per request
	S3GetRequest     float64 // GET, SELECT and the rest: per request
	S3StorageGBMo    float64 // Standard, per GB-month (first 50 TB)
	KinesisODStreamH float64 // on-demand: per stream-hour
	KinesisODInGB    float64 // on-demand: per GB ingested (records rounded up to 1 KB)
	KinesisODOutGB   float64 // on-demand: per GB retrieved
	KinesisShardH    float64 // provisioned: per shard-hour
	KinesisPUTUnit   float64 // provisioned: per PUT payload unit (25 KB of a record)
}

// listPrices are the prices docs/cost.md cites.
var listPrices = prices{
	LambdaRequest:    0.20 / 1e6,
	LambdaGBSecond:   0.0000133334,
	HTTPAPIRequest:   1.00 / 1e6,
	RESTAPIRequest:   3.50 / 1e6,
	DynamoWriteUnit:  0.625 / 1e6,
	DynamoReadUnit:   0.125 / 1e6,
	EFSWriteGB:       0.06,
	EFSReadGB:        0.03,
	EFSStorageGBMo:   0.30,
	EFSProvMBsMonth:  6.00,
	S3PutRequest:     0.005 / 1000,
	S3GetRequest:     0.0004 / 1000,
	S3StorageGBMo:    0.023,
	KinesisODStreamH: 0.04,
	KinesisODInGB:    0.08,
	KinesisODOutGB:   0.04,
	KinesisShardH:    0.015,
	KinesisPUTUnit:   0.014 / 1e6,
}

// Units of the cost model: a GB is 2^30 bytes, as AWS bills data; a month
// is 730 hours; a rate of 1 MB/s is 10^6 bytes a second.
const (
	gib          = 1 << 30
	hoursMonth   = 730.0
	secondsMonth = hoursMonth * 3600
	apiGWChunk   = 512 << 10 // API Gateway meters a request per 512 KB
)

// usage is what some produce requests used, as a bench counted it.
type usage struct {
	Requests      float64 // produce requests (each one Lambda invocation and one API Gateway request)
	BodyBytes     float64 // request body bytes, each request's own (for API Gateway's 512 KB metering)
	LambdaSeconds float64 // produce function duration, all requests together
	DDBWriteUnits float64
	DDBReadUnits  float64
	EFSWriteBytes float64
	EFSReadBytes  float64
	S3Puts        float64 // S3 PUT-class requests (the compactor's, amortised)
	S3Gets        float64 // S3 GET-class requests
	// The compactor function, amortised: its invocations and duration.
	CompactorCalls   float64
	CompactorSeconds float64
}

// bill is what a usage costs, by service, in dollars.
type bill struct {
	Lambda, APIGateway, DynamoDB, EFS, S3 float64
}

func (b bill) Total() float64 { return b.Lambda + b.APIGateway + b.DynamoDB + b.EFS + b.S3 }

// cost prices u with the functions at memoryMB (both produce and
// compactor) and API Gateway's HTTP API. Storage is not in it (see
// idleMonth).
func (p prices) cost(u usage, memoryMB float64) bill {
	gbs := memoryMB / 1024
	chunks := u.Requests
	if u.Requests > 0 {
		chunks = u.Requests * math.Max(1, math.Ceil(u.BodyBytes/u.Requests/apiGWChunk))
	}
	return bill{
		Lambda: (u.Requests+u.CompactorCalls)*p.LambdaRequest +
			(u.LambdaSeconds+u.CompactorSeconds)*gbs*p.LambdaGBSecond,
		APIGateway: chunks * p.HTTPAPIRequest,
		DynamoDB:   u.DDBWriteUnits*p.DynamoWriteUnit + u.DDBReadUnits*p.DynamoReadUnit,
		EFS:        u.EFSWriteBytes/gib*p.EFSWriteGB + u.EFSReadBytes/gib*p.EFSReadGB,
		S3:         u.S3Puts*p.S3PutRequest + u.S3Gets*p.S3GetRequest,
	}
}

// kinesisMonth is a month of Kinesis Data Streams at mbps (10^6 bytes a
// second) of records of recordBytes, written once and read by readers
// consumers: on demand (one stream) and provisioned (the shards the rate
// needs: 1 MiB/s and 1,000 records/s written per shard; reads are in the
// shard-hour).
func (p prices) kinesisMonth(mbps float64, recordBytes, readers int) (onDemand, provisioned float64) {
	bytesPerSec := mbps * 1e6
	recsPerSec := bytesPerSec / float64(recordBytes)
	billedRec := math.Ceil(float64(recordBytes)/1024) * 1024 // on demand rounds each record up to 1 KB
	inGB := recsPerSec * billedRec * secondsMonth / gib
	onDemand = hoursMonth*p.KinesisODStreamH + inGB*p.KinesisODInGB + float64(readers)*inGB*p.KinesisODOutGB
	shards := math.Max(math.Ceil(bytesPerSec/(1<<20)), math.Ceil(recsPerSec/1000))
	units := recsPerSec * math.Ceil(float64(recordBytes)/25600) * secondsMonth // 25 KB payload units
	provisioned = shards*hoursMonth*p.KinesisShardH + units*p.KinesisPUTUnit
	return onDemand, provisioned
}

// perRequest scales u to one request.
func (u usage) perRequest() usage {
	if u.Requests == 0 {
		return usage{}
	}
	n := u.Requests
	return usage{Requests: 1, BodyBytes: u.BodyBytes / n, LambdaSeconds: u.LambdaSeconds / n,
		DDBWriteUnits: u.DDBWriteUnits / n, DDBReadUnits: u.DDBReadUnits / n,
		EFSWriteBytes: u.EFSWriteBytes / n, EFSReadBytes: u.EFSReadBytes / n,
		S3Puts: u.S3Puts / n, S3Gets: u.S3Gets / n,
		CompactorCalls: u.CompactorCalls / n, CompactorSeconds: u.CompactorSeconds / n}
}

// scaled is u times k.
func (u usage) scaled(k float64) usage {
	return usage{Requests: u.Requests * k, BodyBytes: u.BodyBytes * k, LambdaSeconds: u.LambdaSeconds * k,
		DDBWriteUnits: u.DDBWriteUnits * k, DDBReadUnits: u.DDBReadUnits * k,
		EFSWriteBytes: u.EFSWriteBytes * k, EFSReadBytes: u.EFSReadBytes * k,
		S3Puts: u.S3Puts * k, S3Gets: u.S3Gets * k,
		CompactorCalls: u.CompactorCalls * k, CompactorSeconds: u.CompactorSeconds * k}
}
