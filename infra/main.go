// Command infra is the CDK app of s3q: `cdk synth|diff|deploy -c env=<env>`
// (cdk.json runs it as `go run .`) builds the stack s3q-<env>.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/s3q/s3q/infra/s3qstack"
)

func main() {
	defer jsii.Close()
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "infra:", err)
		os.Exit(1)
	}
}

func run() error {
	app := awscdk.NewApp(nil)
	env := "dev"
	if v, ok := app.Node().TryGetContext(jsii.String(s3qstack.ContextEnv)).(string); ok && v != "" {
		env = v
	}
	if err := s3qstack.ValidEnvName(env); err != nil {
		return err
	}
	settings, err := s3qstack.SettingsFromContext(app.Node(), env)
	if err != nil {
		return err
	}
	assetDir := "../dist"
	if v, ok := app.Node().TryGetContext(jsii.String(s3qstack.ContextAssetDir)).(string); ok && v != "" {
		assetDir = v
	}
	var awsEnv *awscdk.Environment
	if account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION"); account != "" && region != "" {
		awsEnv = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	if _, err := s3qstack.NewS3qStack(app, "s3q-"+env, &s3qstack.S3qStackProps{
		StackProps: awscdk.StackProps{Env: awsEnv},
		EnvName:    env,
		AssetDir:   assetDir,
		Settings:   &settings,
	}); err != nil {
		return err
	}
	// cdk-nag's AwsSolutions pack: an unsuppressed error fails the synth.
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	app.Synth(nil)
	return nil
}
