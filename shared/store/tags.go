package store

import "context"

type tagsKey struct{}

// WithTags returns a context whose puts carry these object tags, in S3's
// URL-query form ("s3q-terminal=true"), so that bucket lifecycle rules can
// act on them. A store that cannot tag objects ignores them; the mem store
// does. Tags never change what a put means.
func WithTags(ctx context.Context, tags string) context.Context {
	return context.WithValue(ctx, tagsKey{}, tags)
}

// TagsFrom returns the tags WithTags put on ctx, or "".
func TagsFrom(ctx context.Context) string {
	s, _ := ctx.Value(tagsKey{}).(string)
	return s
}
