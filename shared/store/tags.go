package store

// PutOption sets an option of one put (PutIfAbsent, PutIfMatch, Put).
type PutOption func(*PutOptions)

// PutOptions are the options of one put, as a store reads them with
// PutOptionsOf.
type PutOptions struct {
	// Tags are object tags in S3's URL-query form ("s3q-terminal=true"),
	// so that bucket lifecycle rules can act on them. A store that cannot
	// tag objects ignores them; the mem store does. Tags never change what
	// a put means. Defaults to none.
	Tags string
}

// WithTags tags the object a put writes (see PutOptions.Tags).
func WithTags(tags string) PutOption {
	return func(o *PutOptions) { o.Tags = tags }
}

// PutOptionsOf applies opts in order and returns the result.
func PutOptionsOf(opts ...PutOption) PutOptions {
	var o PutOptions
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
