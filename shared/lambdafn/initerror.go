package lambdafn

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"time"
)

// reportInitError tells the Lambda runtime API that the function's init
// failed and why (POST /runtime/init/error), so that the invoke that
// started it answers with the reason (errorType "Runtime.InitError" and
// err as errorMessage, such as "config: S3Q_BUCKET is required: ...")
// instead of only "Runtime exited with error: exit status 1". It does
// nothing outside Lambda (no AWS_LAMBDA_RUNTIME_API). The caller still
// writes err to stderr (the log) and exits.
func reportInitError(name string, err error) {
	api := os.Getenv("AWS_LAMBDA_RUNTIME_API")
	if api == "" || strings.ContainsAny(api, "/?#") {
		return
	}
	body, _ := json.Marshal(map[string]any{
		"errorMessage": name + ": " + err.Error(),
		"errorType":    "Runtime.InitError",
	})
	req, rerr := http.NewRequest(http.MethodPost, "http://"+api+"/2018-06-01/runtime/init/error", bytes.NewReader(body))
	if rerr != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.InitError")
	resp, rerr := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if rerr == nil {
		resp.Body.Close()
	}
}
