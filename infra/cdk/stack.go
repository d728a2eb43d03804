package main

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsefs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// The stack (docs/design.md, its opening and "Deployments"):
//
//	client ─SigV4─► HTTP API (IAM auth on every route, access log)
//	                 ├─ write routes ─► Produce ──async invoke (Lambda endpoint)─► Compactor
//	                 └─ read routes  ─► Fetch                                      ▲
//	EventBridge rate(N minutes) ───────────────────────────────────────────────────┘
//
//	VPC: isolated subnets only (no NAT, no internet gateway); S3 and
//	DynamoDB gateway endpoints whose policies admit only this stack's
//	bucket and table; rejected-traffic flow log.
//	EFS: encrypted, elastic throughput, one access point (/tierlog, uid/gid
//	1000) mounted at /mnt/tierlog in all three functions. produce and the
//	compactor may write; fetch holds only elasticfilesystem:ClientMount,
//	which makes its mount read-only (see efsMount).
//
// Least privilege (explicit actions; no CDK grant* helpers, whose action
// wildcards would both over-grant and trip AwsSolutions-IAM5):
//
//	function   DynamoDB (table)           S3 (bucket)                       EFS                  Lambda
//	produce    read + write               ListBucket GetObject DeleteObject ClientMount ClientWrite InvokeFunction (compactor)
//	fetch      read                       ListBucket GetObject              ClientMount
//	compactor  read + write               ListBucket GetObject PutObject    ClientMount ClientWrite
//	                                      AbortMultipartUpload DeleteObject
//	deliver    read + write               ListBucket GetObject              ClientMount ClientWrite InvokeFunction (deliverTargets)
//
// The delivery function exists only with the deliverTargets context value;
// produce then may also invoke it (a debounced wake-up), and the Lambda
// endpoint admits the delivery function and its targets.
//
// with read = GetItem BatchGetItem Query and write = PutItem UpdateItem
// DeleteItem: what pkg/meta/dynamo calls (it never Scans, and uses no
// transactions or batch writes), plus BatchGetItem as a read.
// produce may delete objects because deleting a topic purges its cold tier.

// vpcAccessPolicy is the AWS managed policy a VPC function's role needs
// for its ENIs (see nag.go for why it is kept).
const vpcAccessPolicy = "service-role/AWSLambdaVPCAccessExecutionRole"

// HotDir is where every function mounts the EFS access point
// (TIERLOG_HOT_DIR).
const HotDir = "/mnt/tierlog"

// The access point: the directory the functions see as HotDir, and the
// POSIX identity every NFS operation through it is forced to.
const (
	accessPointPath = "/tierlog"
	posixID         = "1000"
)

// emfNamespace is the CloudWatch namespace of the functions' own metrics
// (pkg/lambdafn.EMFNamespace; pkg/lambdafn's tests check the two agree).
const emfNamespace = "tierlog"

// Function names, as used by TierlogStackProps.Code and the dist zips.
const (
	FnProduce   = "produce"
	FnFetch     = "fetch"
	FnCompactor = "compactor"
	FnDeliver   = "deliver" // with Config.DeliverTargets only
)

// Route is one route of the HTTP API and the function serving it.
type Route struct {
	Method   awsapigatewayv2.HttpMethod
	Path     string
	Function string
}

// Routes (routes_gen.go) is generated from pkg/api's route table.

// IAM actions granted on the table and the bucket (see the table above).
var (
	tableReadActions  = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:Query"}
	tableWriteActions = []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
)

// accessLogFormat is the HTTP API access log line (JSON, one per request).
// userArn is the SigV4 caller: with IAM authorization every request has one.
const accessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"userArn":"$context.identity.userArn","requestTime":"$context.requestTime",` +
	`"routeKey":"$context.routeKey","status":"$context.status","protocol":"$context.protocol",` +
	`"responseLength":"$context.responseLength","latency":"$context.responseLatency",` +
	`"integrationLatency":"$context.integrationLatency","integrationError":"$context.integrationErrorMessage"}`

// TierlogStackProps configures NewTierlogStack.
type TierlogStackProps struct {
	awscdk.StackProps
	// Config is validated by NewTierlogStack; start from DefaultConfig.
	Config Config
	// Code returns the deployment package of one function (FnProduce,
	// FnFetch, FnCompactor). nil means the zip files
	// Config.DistDir/<function>.zip. Tests set it so they need no build.
	Code func(function string) awslambda.Code
}

// NewTierlogStack builds the whole deployment in one stack. It panics on
// an invalid props.Config (as CDK constructs do on invalid input).
func NewTierlogStack(scope constructs.Construct, id *string, props *TierlogStackProps) awscdk.Stack {
	if props == nil {
		props = &TierlogStackProps{Config: DefaultConfig()}
	}
	cfg := props.Config
	if err := cfg.validate(); err != nil {
		panic(err)
	}
	code := props.Code
	if code == nil {
		code = func(fn string) awslambda.Code {
			return awslambda.Code_FromAsset(jsii.String(filepath.Join(cfg.DistDir, fn+".zip")), nil)
		}
	}
	sprops := props.StackProps
	if sprops.Description == nil {
		hot := "EFS hot tier"
		if !cfg.EFS() {
			hot = "hot tier: LocalStack bind mount at " + HotDir
		}
		sprops.Description = jsii.String("tierlog: serverless tiered log (" + hot + ", S3 cold tier, DynamoDB metadata)")
	}
	stack := awscdk.NewStack(scope, id, &sprops)
	awscdk.Tags_Of(stack).Add(jsii.String("project"), jsii.String("tierlog"), nil)

	removal := awscdk.RemovalPolicy_DESTROY
	if cfg.Retain() {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	retention := awslogs.RetentionDays(allowedRetentionDays[cfg.LogRetentionDays])
	newLogGroup := func(id string) awslogs.LogGroup {
		return awslogs.NewLogGroup(stack, jsii.String(id), &awslogs.LogGroupProps{
			Retention:     retention,
			RemovalPolicy: removal,
		})
	}

	// ---- network ----
	// With hotTier=bindMount there is no VPC: it exists only so the
	// functions can reach EFS; vpc, fs and ap stay nil.
	var (
		isolated                   *awsec2.SubnetSelection
		vpc                        awsec2.Vpc
		s3Endpoint, dynamoEndpoint awsec2.GatewayVpcEndpoint
		fs                         awsefs.FileSystem
		ap                         awsefs.AccessPoint
	)
	if cfg.EFS() {
		isolated = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED}
		vpc = awsec2.NewVpc(stack, jsii.String("Vpc"), &awsec2.VpcProps{
			MaxAzs:      jsii.Number(cfg.MaxAzs),
			NatGateways: jsii.Number(0),
			SubnetConfiguration: &[]*awsec2.SubnetConfiguration{{
				Name:       jsii.String("isolated"),
				SubnetType: awsec2.SubnetType_PRIVATE_ISOLATED,
				CidrMask:   jsii.Number(24),
			}},
			// Rejected traffic only: it is what shows a security group or
			// endpoint misconfiguration, at a fraction of ALL's volume.
			FlowLogs: &map[string]*awsec2.FlowLogOptions{
				"Rejected": {
					TrafficType: awsec2.FlowLogTrafficType_REJECT,
					Destination: awsec2.FlowLogDestination_ToCloudWatchLogs(newLogGroup("VpcFlowLogs"), nil),
				},
			},
			// Restricting the default security group needs a custom-resource
			// Lambda; nothing here uses the default group (every ENI gets its
			// own), so it stays as VPC creates it.
			RestrictDefaultSecurityGroup: jsii.Bool(false),
		})
		s3Endpoint = vpc.AddGatewayEndpoint(jsii.String("S3Endpoint"), &awsec2.GatewayVpcEndpointOptions{
			Service: awsec2.GatewayVpcEndpointAwsService_S3(),
		})
		dynamoEndpoint = vpc.AddGatewayEndpoint(jsii.String("DynamoDBEndpoint"), &awsec2.GatewayVpcEndpointOptions{
			Service: awsec2.GatewayVpcEndpointAwsService_DYNAMODB(),
		})
	}

	// ---- storage ----
	table := awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		TableName:    optString(cfg.TableName),
		PartitionKey: &awsdynamodb.Attribute{Name: jsii.String("pk"), Type: awsdynamodb.AttributeType_STRING},
		SortKey:      &awsdynamodb.Attribute{Name: jsii.String("sk"), Type: awsdynamodb.AttributeType_STRING},
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(cfg.Retain()),
		RemovalPolicy:      removal,
	})
	bucket := awss3.NewBucket(stack, jsii.String("Bucket"), &awss3.BucketProps{
		BucketName:        optString(cfg.BucketName),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		MinimumTLSVersion: jsii.Number(1.2),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		Versioned:         jsii.Bool(false),
		RemovalPolicy:     removal,
	})
	if cfg.EFS() {
		fs = awsefs.NewFileSystem(stack, jsii.String("HotTier"), &awsefs.FileSystemProps{
			Vpc:             vpc,
			VpcSubnets:      isolated,
			Encrypted:       jsii.Bool(true),
			ThroughputMode:  awsefs.ThroughputMode_ELASTIC,
			PerformanceMode: awsefs.PerformanceMode_GENERAL_PURPOSE,
			RemovalPolicy:   removal,
			// true only stops CDK from adding its own statement (AnyPrincipal
			// may ClientWrite and ClientRootAccess via a mount target), which
			// under the @aws-cdk/aws-efs:denyAnonymousAccess feature flag
			// would make fetch's mount writable. The file system policy below
			// grants nothing to anonymous (non-IAM) clients, not even
			// ClientMount, so they still cannot mount.
			AllowAnonymousAccess: jsii.Bool(true),
		})
		ap = fs.AddAccessPoint(jsii.String("AccessPoint"), &awsefs.AccessPointOptions{
			Path:      jsii.String(accessPointPath),
			PosixUser: &awsefs.PosixUser{Uid: jsii.String(posixID), Gid: jsii.String(posixID)},
			CreateAcl: &awsefs.Acl{OwnerUid: jsii.String(posixID), OwnerGid: jsii.String(posixID), Permissions: jsii.String("750")},
		})

		// The gateway endpoints admit only this stack's bucket and table: the
		// functions have no other S3 or DynamoDB business, and it closes the
		// VPC as an exfiltration path even to a role with broader rights.
		s3Endpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("s3:ListBucket", "s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"),
			Resources:  &[]*string{bucket.BucketArn(), bucket.ArnForObjects(jsii.String("*"))},
		}))
		dynamoEndpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings(append(append([]string{}, tableReadActions...), tableWriteActions...)...),
			Resources:  &[]*string{table.TableArn()},
		}))
	}

	// ---- functions ----
	// efsMount mounts the access point at HotDir. Lambda's file system
	// config has no read-only flag, and FileSystem_FromEfsAccessPoint
	// always grants ClientWrite, so the config is built here: ClientMount
	// alone (write=false, for fetch) gives a read-only NFS mount, because
	// EFS IAM authorization refuses writes without ClientWrite and the
	// file system policy below grants ClientWrite to nobody else.
	efsMount := func(write bool) awslambda.FileSystem {
		if !cfg.EFS() {
			return nil // the bind mount is LocalStack's (LAMBDA_DOCKER_FLAGS)
		}
		actions := []string{"elasticfilesystem:ClientMount"}
		if write {
			actions = append(actions, "elasticfilesystem:ClientWrite")
		}
		return awslambda.NewFileSystem(&awslambda.FileSystemConfig{
			Arn:            ap.AccessPointArn(),
			LocalMountPath: jsii.String(HotDir),
			Connections:    fs.Connections(),
			Dependency:     &[]constructs.IDependable{fs.MountTargetsAvailable()},
			Policies: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Actions:   jsii.Strings(actions...),
				Resources: &[]*string{fs.FileSystemArn()},
				Conditions: &map[string]any{
					"StringEquals": map[string]any{"elasticfilesystem:AccessPointArn": ap.AccessPointArn()},
				},
			})},
		})
	}
	env := func(extra map[string]*string) *map[string]*string {
		m := map[string]*string{
			"TIERLOG_HOT_DIR": jsii.String(HotDir),
			"TIERLOG_TABLE":   table.TableName(),
			"TIERLOG_BUCKET":  bucket.BucketName(),
		}
		for k, v := range extra {
			m[k] = v
		}
		return &m
	}
	// Each function gets a role and a security group created here, beside
	// it rather than inside it: a Function's children inherit its
	// dependency on the EFS mount targets, and the file system policy names
	// the roles, so roles inside the functions would close a cycle. Own
	// roles also skip AWSLambdaBasicExecutionRole (logs:* on every log
	// group): each role may write its own log group only.
	arch := awslambda.Architecture_ARM_64()
	if cfg.LambdaArch == "amd64" {
		arch = awslambda.Architecture_X86_64()
	}
	newFunction := func(id, name, description string, memoryMB, timeoutSeconds int, fsys awslambda.FileSystem,
		environment *map[string]*string, reserved *float64) awslambda.Function {
		logs := newLogGroup(id + "Logs")
		var managed *[]awsiam.IManagedPolicy
		if cfg.EFS() {
			managed = &[]awsiam.IManagedPolicy{
				awsiam.ManagedPolicy_FromAwsManagedPolicyName(jsii.String(vpcAccessPolicy)),
			}
		}
		role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
			Description:     jsii.String("tierlog " + name + " function"),
			AssumedBy:       awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			ManagedPolicies: managed,
		})
		role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: &[]*string{logs.LogGroupArn()},
		}))
		var sgs *[]awsec2.ISecurityGroup
		if cfg.EFS() {
			sg := awsec2.NewSecurityGroup(stack, jsii.String(id+"SecurityGroup"), &awsec2.SecurityGroupProps{
				Vpc:              vpc,
				Description:      jsii.String("tierlog " + name + " function"),
				AllowAllOutbound: jsii.Bool(true),
			})
			// Egress stays open (the isolated subnets route nowhere but the
			// VPC and the gateway endpoints, whose prefix lists a template
			// cannot name offline), so the per-peer egress rules CDK would add
			// for EFS and the Lambda endpoint are redundant.
			awscdk.Annotations_Of(sg).AcknowledgeWarning(jsii.String("@aws-cdk/aws-ec2:ipv4IgnoreEgressRule"),
				jsii.String("all outbound is allowed on purpose; see stack.go"))
			sgs = &[]awsec2.ISecurityGroup{sg}
		}
		return awslambda.NewFunction(stack, jsii.String(id), &awslambda.FunctionProps{
			Role:                         role,
			SecurityGroups:               sgs,
			Description:                  jsii.String(description),
			Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture:                 arch,
			Handler:                      jsii.String("bootstrap"),
			Code:                         code(name),
			MemorySize:                   jsii.Number(memoryMB),
			Timeout:                      awscdk.Duration_Seconds(jsii.Number(timeoutSeconds)),
			Tracing:                      awslambda.Tracing_ACTIVE,
			Vpc:                          vpc,
			VpcSubnets:                   isolated,
			Filesystem:                   fsys,
			Environment:                  environment,
			LogGroup:                     logs,
			ReservedConcurrentExecutions: reserved,
		})
	}
	var compactorReserved *float64
	if cfg.CompactorConcurrency > 0 {
		compactorReserved = jsii.Number(cfg.CompactorConcurrency)
	}
	compactor := newFunction("Compactor", FnCompactor,
		"tierlog compactor: seals EFS segments into S3, retention, cleanup (schedule + async invoke)",
		cfg.CompactorMemoryMB, cfg.CompactorTimeoutSeconds, efsMount(true), env(nil), compactorReserved)
	produceEnv, fetchEnv := map[string]*string{}, map[string]*string{}
	if cfg.Tokens() {
		// The functions verify access tokens against the table.
		produceEnv["TIERLOG_AUTH"], fetchEnv["TIERLOG_AUTH"] = jsii.String(AuthTokens), jsii.String(AuthTokens)
	}
	if cfg.CompactorInvokeEndpoint {
		produceEnv["TIERLOG_COMPACTOR_FUNCTION"] = compactor.FunctionName()
	}
	produce := newFunction("Produce", FnProduce,
		"tierlog produce: appends records, topic admin, group offset commits",
		cfg.ProduceMemoryMB, cfg.ProduceTimeoutSeconds, efsMount(true), env(produceEnv), nil)
	fetch := newFunction("Fetch", FnFetch,
		"tierlog fetch: reads records (EFS hot tier, S3 cold tier), offsets, topic and group reads",
		cfg.FetchMemoryMB, cfg.FetchTimeoutSeconds, efsMount(false), env(fetchEnv), nil)
	// The delivery function (subscriptions, docs/subscriptions.md): with
	// deliverTargets only. It reads records, commits group offsets and
	// produces given-up records to on_failure topics, so it mounts EFS
	// writable like produce.
	var deliver awslambda.Function
	writers := []awsiam.IPrincipal{produce.Role(), compactor.Role()}
	if cfg.Deliver() {
		deliver = newFunction("Deliver", FnDeliver,
			"tierlog deliver: pushes subscriptions' records to their Lambda targets (produce wake-up + schedule)",
			cfg.DeliverMemoryMB, cfg.DeliverTimeoutSeconds, efsMount(true), env(nil), nil)
		produce.AddEnvironment(jsii.String("TIERLOG_DELIVER_FUNCTION"), deliver.FunctionName(), nil)
		writers = append(writers, deliver.Role())
	}

	// The EFS file system policy replaces EFS's default policy (which lets
	// any client that reaches a mount target do anything). Both ClientMount
	// and ClientWrite need IAM-authenticated principals; only produce and
	// the compactor may write. Same-account access is the union of this
	// and the roles' own policies, which grant the same actions.
	if cfg.EFS() {
		viaMountTarget := &map[string]any{"Bool": map[string]any{"elasticfilesystem:AccessedViaMountTarget": "true"}}
		fs.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("MountForTierlogFunctions"),
			Principals: &[]awsiam.IPrincipal{produce.Role(), fetch.Role(), compactor.Role()},
			Actions:    jsii.Strings("elasticfilesystem:ClientMount"),
			Conditions: viaMountTarget,
		}))
		if deliver != nil {
			fs.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("MountForDeliver"),
				Principals: &[]awsiam.IPrincipal{deliver.Role()},
				Actions:    jsii.Strings("elasticfilesystem:ClientMount"),
				Conditions: viaMountTarget,
			}))
		}
		fs.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("WriteForProduceAndCompactor"),
			Principals: &writers,
			Actions:    jsii.Strings("elasticfilesystem:ClientWrite"),
			Conditions: viaMountTarget,
		}))
	}

	allow := func(fn awslambda.Function, actions []string, resources ...*string) {
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings(actions...),
			Resources: &resources,
		}))
	}
	objects := bucket.ArnForObjects(jsii.String("*"))
	tableRW := append(append([]string{}, tableReadActions...), tableWriteActions...)

	allow(produce, tableRW, table.TableArn())
	allow(produce, []string{"s3:ListBucket"}, bucket.BucketArn())
	allow(produce, []string{"s3:GetObject", "s3:DeleteObject"}, objects)

	allow(fetch, tableReadActions, table.TableArn())
	allow(fetch, []string{"s3:ListBucket"}, bucket.BucketArn())
	allow(fetch, []string{"s3:GetObject"}, objects)

	allow(compactor, tableRW, table.TableArn())
	allow(compactor, []string{"s3:ListBucket"}, bucket.BucketArn())
	// Artifacts over the multipart threshold are uploaded in parts; a
	// failed upload is aborted so no parts linger.
	allow(compactor, []string{"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"}, objects)

	if cfg.CompactorInvokeEndpoint {
		// Exactly the function, not GrantInvoke's "<arn>:*" (versions and
		// aliases are not used).
		allow(produce, []string{"lambda:InvokeFunction"}, compactor.FunctionArn())
	}
	// The delivery function may invoke exactly the targets the stack was
	// told about (deliverTargets); produce may wake it.
	var deliverTargets []*string
	if deliver != nil {
		allow(deliver, tableRW, table.TableArn())
		allow(deliver, []string{"s3:ListBucket"}, bucket.BucketArn())
		allow(deliver, []string{"s3:GetObject"}, objects)
		for _, t := range cfg.deliverTargets() {
			arn := jsii.String(t)
			if !strings.HasPrefix(t, "arn:") {
				arn = stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("lambda"), Resource: jsii.String("function"),
					ResourceName: jsii.String(t), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
			}
			deliverTargets = append(deliverTargets, arn)
		}
		allow(deliver, []string{"lambda:InvokeFunction"}, deliverTargets...)
		allow(produce, []string{"lambda:InvokeFunction"}, deliver.FunctionArn())
	}
	if (cfg.CompactorInvokeEndpoint || deliver != nil) && cfg.EFS() {
		// Isolated subnets reach the Lambda API only through this
		// endpoint; only produce may connect, and only to invoke the
		// compactor.
		lambdaEndpoint := vpc.AddInterfaceEndpoint(jsii.String("LambdaEndpoint"), &awsec2.InterfaceVpcEndpointOptions{
			Service:           awsec2.InterfaceVpcEndpointAwsService_LAMBDA(),
			Subnets:           isolated,
			PrivateDnsEnabled: jsii.Bool(true),
			Open:              jsii.Bool(false),
		})
		lambdaEndpoint.Connections().AllowDefaultPortFrom(produce, jsii.String("produce: async invoke of the compactor"))
		var invokable []*string
		if cfg.CompactorInvokeEndpoint {
			invokable = append(invokable, compactor.FunctionArn())
		}
		if deliver != nil {
			lambdaEndpoint.Connections().AllowDefaultPortFrom(deliver, jsii.String("deliver: invokes of the subscriptions' targets"))
			invokable = append(append(invokable, deliver.FunctionArn()), deliverTargets...)
		}
		lambdaEndpoint.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Principals: &[]awsiam.IPrincipal{awsiam.NewAnyPrincipal()},
			Actions:    jsii.Strings("lambda:InvokeFunction"),
			Resources:  &invokable,
		}))
	}

	// ---- API ----
	integrations := map[string]awsapigatewayv2.HttpRouteIntegration{}
	for name, fn := range map[string]awslambda.Function{FnProduce: produce, FnFetch: fetch} {
		integrations[name] = awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String(capitalize(name)+"Integration"), fn,
			&awsapigatewayv2integrations.HttpLambdaIntegrationProps{PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0()})
	}
	// With auth=iam every route needs IAM authorization. With auth=tokens
	// the functions verify access tokens and API Gateway authorizes
	// nothing but the token routes, which stay IAM-only: tokens are made
	// and revoked by IAM principals (the first one included).
	var defaultAuthorizer awsapigatewayv2.IHttpRouteAuthorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
	description := "tierlog HTTP API (docs/api.md); SigV4-signed requests only"
	if cfg.Tokens() {
		defaultAuthorizer = nil
		description = "tierlog HTTP API (docs/api.md); access tokens, verified by the functions; token routes SigV4-signed"
	}
	api := awsapigatewayv2.NewHttpApi(stack, jsii.String("Api"), &awsapigatewayv2.HttpApiProps{
		ApiName:           jsii.String(*id),
		Description:       jsii.String(description),
		DefaultAuthorizer: defaultAuthorizer,
		// The $default route (IAM-authorized too): a signed request no
		// route matches reaches fetch, whose route filter answers 404
		// not_found or 405 method_not_allowed (with Allow) in docs/api.md's
		// error shape instead of API Gateway's {"message":"Not Found"}.
		DefaultIntegration: integrations[FnFetch],
	})
	for _, r := range Routes {
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(r.Path),
			Methods:     &[]awsapigatewayv2.HttpMethod{r.Method},
			Integration: integrations[r.Function],
		}
		if cfg.Tokens() && tokenRoute(r.Path) {
			opts.Authorizer = awsapigatewayv2authorizers.NewHttpIamAuthorizer()
		}
		api.AddRoutes(opts)
	}
	if cfg.Tokens() {
		addTokenAuthSuppression(api)
	}
	// The default stage's access log (HttpStage's own accessLogSettings
	// takes an interface, the L1 property is simpler).
	apiLogs := newLogGroup("ApiAccessLogs")
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: apiLogs.LogGroupArn(),
		Format:         jsii.String(accessLogFormat),
	})

	// ---- schedule ----
	awsevents.NewRule(stack, jsii.String("CompactorSchedule"), &awsevents.RuleProps{
		Description: jsii.String("tierlog: periodic compactor run (tiering, retention, cleanup)"),
		Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(cfg.ScheduleMinutes))),
		Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(compactor, nil)},
	})
	if deliver != nil {
		// The safety net under produce's wake-ups (a skipped or failed
		// one, a retry's backoff): a pass that finds nothing returns at once.
		awsevents.NewRule(stack, jsii.String("DeliverSchedule"), &awsevents.RuleProps{
			Description: jsii.String("tierlog: periodic delivery pass (subscriptions)"),
			Schedule:    awsevents.Schedule_Rate(awscdk.Duration_Minutes(jsii.Number(cfg.ScheduleMinutes))),
			Targets:     &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(deliver, nil)},
		})
	}

	// ---- alarms ----
	alarmed := []struct {
		id string
		fn awslambda.Function
	}{{"Produce", produce}, {"Fetch", fetch}, {"Compactor", compactor}}
	if deliver != nil {
		alarmed = append(alarmed, struct {
			id string
			fn awslambda.Function
		}{"Deliver", deliver})
	}
	for _, f := range alarmed {
		period := &awscloudwatch.MetricOptions{Period: awscdk.Duration_Minutes(jsii.Number(5)), Statistic: jsii.String("Sum")}
		for _, m := range []struct {
			kind   string
			metric awscloudwatch.Metric
		}{{"Errors", f.fn.MetricErrors(period)}, {"Throttles", f.fn.MetricThrottles(period)}} {
			awscloudwatch.NewAlarm(stack, jsii.String(f.id+m.kind+"Alarm"), &awscloudwatch.AlarmProps{
				AlarmDescription:   jsii.String(fmt.Sprintf("tierlog %s function: %s in 5 minutes", f.id, m.kind)),
				Metric:             m.metric,
				Threshold:          jsii.Number(1),
				EvaluationPeriods:  jsii.Number(1),
				ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
				TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
			})
		}
	}

	// Damage on disk (pkg/metrics, written by the functions as EMF in
	// namespace "tierlog", dimension Function): a read that reached damaged
	// records, a segment the compactor quarantined. Either one is an alarm.
	for _, a := range []struct{ id, function, metric, desc string }{
		{"FetchDamagedReadsAlarm", FnFetch, "DamagedReads", "tierlog fetch function: reads reached records damaged on disk"},
		{"ProduceDamagedReadsAlarm", FnProduce, "DamagedReads", "tierlog produce function: reads reached records damaged on disk"},
		{"CompactorQuarantineAlarm", FnCompactor, "SegmentsQuarantined", "tierlog compactor: a sealed segment failed verification and was quarantined (kept hot, not tiered)"},
	} {
		awscloudwatch.NewAlarm(stack, jsii.String(a.id), &awscloudwatch.AlarmProps{
			AlarmDescription: jsii.String(a.desc),
			Metric: awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
				Namespace:     jsii.String(emfNamespace),
				MetricName:    jsii.String(a.metric),
				DimensionsMap: &map[string]*string{"Function": jsii.String(a.function)},
				Period:        awscdk.Duration_Minutes(jsii.Number(5)),
				Statistic:     jsii.String("Sum"),
			}),
			Threshold:          jsii.Number(1),
			EvaluationPeriods:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
	}

	// ---- outputs ----
	apiArn := awscdk.Stack_Of(api).FormatArn(&awscdk.ArnComponents{
		Service:  jsii.String("execute-api"),
		Resource: api.ApiId(),
	})
	type output struct {
		id, desc string
		v        *string
	}
	outputs := []output{
		{"ApiUrl", "HTTP API base URL (SigV4, service execute-api)", api.ApiEndpoint()},
		{"ApiArn", "execute-api ARN of the HTTP API: IAM policies grant execute-api:Invoke on <ApiArn>/$default/<METHOD>/<path>", apiArn},
		{"ExampleTopicPolicyStatement", "IAM policy statement: produce to and consume from one topic (replace TOPIC; add " +
			"<ApiArn>/$default/*/v1/groups/GROUP/offsets for a consumer group)", examplePolicy(apiArn, "TOPIC", "*")},
		{"ExampleTopicReadOnlyPolicyStatement", "IAM policy statement: consume from one topic only (replace TOPIC)",
			examplePolicy(apiArn, "TOPIC", "GET", "HEAD")},
		{"TokenAdminPolicyStatement", "IAM policy statement: make, list and revoke access tokens (with auth=tokens, the only IAM-authorized routes)",
			jsii.String(`{"Effect":"Allow","Action":"execute-api:Invoke","Resource":["` + *apiArn + `/$default/*/v1/tokens","` + *apiArn + `/$default/*/v1/tokens/*"]}`)},
		{"TableName", "DynamoDB metadata table", table.TableName()},
		{"BucketName", "S3 cold-tier bucket", bucket.BucketName()},
		{"CompactorFunctionName", "compactor function (invoke to run a compaction now)", compactor.FunctionName()},
	}
	if cfg.EFS() {
		outputs = append(outputs, output{"FileSystemId", "EFS hot-tier file system", fs.FileSystemId()})
	}
	if deliver != nil {
		outputs = append(outputs, output{"DeliverFunctionName", "delivery function (invoke to run a delivery pass now)", deliver.FunctionName()})
	}
	for _, o := range outputs {
		awscdk.NewCfnOutput(stack, jsii.String(o.id), &awscdk.CfnOutputProps{Value: o.v, Description: jsii.String(o.desc)})
	}

	roles := []awsiam.IRole{produce.Role(), fetch.Role(), compactor.Role()}
	if deliver != nil {
		roles = append(roles, deliver.Role())
	}
	addNagSuppressions(roles, bucket)
	return stack
}

// tokenRoute reports whether path is a token route (/v1/tokens...).
func tokenRoute(path string) bool {
	return path == "/v1/tokens" || strings.HasPrefix(path, "/v1/tokens/")
}

// examplePolicy is an IAM policy statement, as JSON, allowing
// execute-api:Invoke with the given methods ("*" for all) on one topic's
// paths: /v1/topics/TOPIC and everything under it. apiArn is a token;
// CloudFormation joins the string.
func examplePolicy(apiArn *string, topic string, methods ...string) *string {
	var resources []string
	for _, m := range methods {
		for _, p := range []string{"/v1/topics/" + topic, "/v1/topics/" + topic + "/*"} {
			resources = append(resources, fmt.Sprintf("%q", *apiArn+"/$default/"+m+p))
		}
	}
	return jsii.String(`{"Effect":"Allow","Action":"execute-api:Invoke","Resource":[` + strings.Join(resources, ",") + `]}`)
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return jsii.String(s)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
