package devserver

import (
	"io"
	"net/http"
	"strings"
)

// invokePrefix is the dev server's own route POST /dev/invoke/{function}:
// it runs one invocation of a function's handler with the request body as
// its event and answers with the handler's response, as Lambda's Invoke
// would. `s3q invoke` uses it when no bucket is configured, so that it
// works against a running s3q dev with no environment at all. It is not
// part of the API and is not deployed.
const invokePrefix = "/dev/invoke/"

// serveInvoke serves POST /dev/invoke/{function}: 200 with the handler's
// response, 404 not_found for an unknown function, 502 function_error
// (with the error as message) when the handler fails.
func (g *gateway) serveInvoke(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use POST")
		return
	}
	name := strings.TrimPrefix(r.URL.Path, invokePrefix)
	f, ok := g.functions[name]
	if !ok {
		writeErrorField(w, http.StatusNotFound, "not_found", "function", "no function "+name)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, 6<<20))
	if err != nil {
		writeErrorField(w, http.StatusBadRequest, "invalid_input", "body", "the event could not be read: "+err.Error())
		return
	}
	out, err := f.invoke(r.Context(), payload)
	if err != nil {
		writeErrorField(w, http.StatusBadGateway, "function_error", "function", name+": "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
