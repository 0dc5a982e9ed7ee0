package s3store

import (
	"bytes"
	"context"
	"encoding/xml"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// The server lists a key's versions and delete markers in one
// newest-first sequence, but the SDK splits it into two lists. Where the
// server's LastModified has whole seconds, a version and a delete marker
// of the same second cannot be put back in order by time; so such a tie
// is decided by the sequence the server sent: a deserialize middleware
// reads the answer's XML for the order of its entries (key and version
// id) before the SDK's deserializer reads it.

// versionOrderKey holds, in an answer's metadata, its entries' order.
type versionOrderKey struct{}

// versionEntry is one <Version> or <DeleteMarker> of a listing.
type versionEntry struct{ key, versionID string }

// withVersionOrder is the per-request option that records the order.
func withVersionOrder(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("s3qVersionOrder", recordVersionOrder), middleware.After)
	})
}

func recordVersionOrder(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	resp, ok := out.RawResponse.(*smithyhttp.Response)
	if !ok || resp.StatusCode != http.StatusOK || resp.Body == nil {
		return out, md, nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return out, md, err
	}
	md.Set(versionOrderKey{}, versionOrder(body))
	return out, md, nil
}

// versionOrder returns the entries of a ListVersionsResult in document
// order; nil when it does not parse.
func versionOrder(body []byte) []versionEntry {
	dec := xml.NewDecoder(bytes.NewReader(body))
	var (
		order []versionEntry
		cur   *versionEntry
		field string
	)
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return order
		}
		if err != nil {
			return nil
		}
		switch t := tok.(type) {
		case xml.StartElement:
			switch {
			case t.Name.Local == "Version" || t.Name.Local == "DeleteMarker":
				cur, field = &versionEntry{}, ""
			case cur != nil:
				field = t.Name.Local
			}
		case xml.CharData:
			if cur == nil {
				continue
			}
			switch field {
			case "Key":
				cur.key += string(t)
			case "VersionId":
				cur.versionID += string(t)
			}
		case xml.EndElement:
			switch {
			case cur != nil && (t.Name.Local == "Version" || t.Name.Local == "DeleteMarker"):
				order = append(order, *cur)
				cur = nil
			case cur != nil:
				field = ""
			}
		}
	}
}
