// Command cdk is tierlog's CDK app: `cdk synth` / `cdk deploy` run it
// (cdk.json: "go run ."). Context keys are Config's json tags.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	cfg, err := ConfigFromContext(func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fns := []string{FnProduce, FnFetch, FnCompactor}
	if cfg.Deliver() {
		fns = append(fns, FnDeliver)
	}
	if err := checkDist(cfg.DistDir, fns...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	NewTierlogStack(app, jsii.String(cfg.StackName), &TierlogStackProps{Config: cfg})
	if cfg.Nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	}
	app.Synth(nil)
}

// checkDist fails early, with the fix, when a function zip is missing
// (CDK's own message is a stack trace from Node).
// fns are the functions to check; none means produce, fetch and compactor.
func checkDist(dir string, fns ...string) error {
	if len(fns) == 0 {
		fns = []string{FnProduce, FnFetch, FnCompactor}
	}
	for _, fn := range fns {
		p := filepath.Join(dir, fn+".zip")
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("tierlog cdk: %v\n"+
				"build the functions first (`make build` writes dist/*.zip), or point -c distDir=DIR at a directory holding %s", err, strings.Join(zips(fns), ", "))
		}
	}
	return nil
}

func zips(fns []string) []string {
	out := make([]string, len(fns))
	for i, fn := range fns {
		out[i] = fn + ".zip"
	}
	return out
}
