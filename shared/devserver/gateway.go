package devserver

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/lambdafn"
)

// gateway plays API Gateway in front of the HTTP functions: it turns a
// request into a payload format 2.0 event, invokes the function owning
// its route with the event's JSON (as Lambda would), and writes the
// function's response back.
type gateway struct {
	handlers map[string]lambda.Handler
	log      *slog.Logger
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ev, err := lambdafn.EventFromRequest(r, api.DefaultMaxBodyBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_input", err.Error())
		return
	}
	name := lambdafn.FunctionForRequest(r.Method, r.URL.Path)
	payload, err := json.Marshal(ev)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "encode event: "+err.Error())
		return
	}
	out, err := g.handlers[name].Invoke(r.Context(), payload)
	if err != nil {
		// API Gateway answers 500 when a function fails.
		g.log.Error("function failed", "function", name, "error", err)
		writeError(w, http.StatusInternalServerError, "internal", "function "+name+" failed")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		g.log.Error("function answered no API Gateway response", "function", name, "error", err)
		writeError(w, http.StatusInternalServerError, "internal", "function "+name+" answered no response")
		return
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "function "+name+" answered bad base64")
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// writeError writes an error in the API's shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
