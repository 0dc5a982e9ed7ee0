package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	bolt "go.etcd.io/bbolt"

	"github.com/s3q/s3q/shared/store/s3store"
)

// boltS3 is a gofakes3 server over its bolt backend: one file holds the
// bucket, written through on every PUT, so the state survives a restart.
// The backend honours If-None-Match and If-Match on PUT like the
// in-memory one, but keeps one version per key.
type boltS3 struct {
	Endpoint string
	client   *s3.Client
	bucket   string
	file     *bolt.DB
	srv      *http.Server
	served   chan error
}

// startBoltS3 serves the bolt file at path on a free loopback port, with
// bucket created in it if it is new.
func startBoltS3(path, bucket string) (*boltS3, error) {
	file, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("devserver: open %s: %w (is another s3q dev using it?)", path, err)
	}
	db := s3bolt.New(file)
	if ok, err := db.BucketExists(bucket); err != nil {
		file.Close()
		return nil, fmt.Errorf("devserver: %s: %w", path, err)
	} else if !ok {
		if err := db.CreateBucket(bucket); err != nil {
			file.Close()
			return nil, fmt.Errorf("devserver: create bucket %s in %s: %w", bucket, path, err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("devserver: listen for gofakes3: %w", err)
	}
	b := &boltS3{
		Endpoint: "http://" + ln.Addr().String(),
		bucket:   bucket,
		file:     file,
		srv:      &http.Server{Handler: gofakes3.New(singleVersion{db}).Server(), ReadHeaderTimeout: 10 * time.Second},
		served:   make(chan error, 1),
	}
	go func() { b.served <- b.srv.Serve(ln) }()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if b.client, err = s3store.NewClient(ctx, s3store.Config{
		Endpoint: b.Endpoint, Region: "us-east-1", AccessKey: "s3q", SecretKey: "s3q-secret", PathStyle: true,
	}); err != nil {
		b.Close()
		return nil, fmt.Errorf("devserver: %w", err)
	}
	return b, nil
}

// Store returns a store on the bucket under prefix.
func (b *boltS3) Store(prefix string) *s3store.Store { return s3store.New(b.client, b.bucket, prefix) }

// Close stops the server and closes the file.
func (b *boltS3) Close() error {
	err := b.srv.Close()
	if serveErr := <-b.served; !errors.Is(serveErr, http.ErrServerClosed) && err == nil {
		err = serveErr
	}
	if cerr := b.file.Close(); err == nil {
		err = cerr
	}
	return err
}

// singleVersion presents the bolt backend as a versioned one whose every
// key has exactly one version, "null" (what S3 calls the version of an
// object written without versioning): enough for the queue's history,
// which then shows the current version only.
type singleVersion struct{ *s3bolt.Backend }

var _ gofakes3.VersionedBackend = singleVersion{}

const nullVersion gofakes3.VersionID = "null"

// VersioningConfiguration reports versioning as never enabled.
func (b singleVersion) VersioningConfiguration(bucket string) (gofakes3.VersioningConfiguration, error) {
	if ok, err := b.BucketExists(bucket); err != nil || !ok {
		return gofakes3.VersioningConfiguration{}, gofakes3.BucketNotFound(bucket)
	}
	return gofakes3.VersioningConfiguration{}, nil
}

// SetVersioningConfiguration refuses: the backend cannot keep versions.
func (b singleVersion) SetVersioningConfiguration(bucket string, v gofakes3.VersioningConfiguration) error {
	return gofakes3.ErrNotImplemented
}

// GetObjectVersion returns the object for the "null" version.
func (b singleVersion) GetObjectVersion(bucket, key string, id gofakes3.VersionID, rnge *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	if id != nullVersion && id != "" {
		return nil, gofakes3.ErrNoSuchVersion
	}
	obj, err := b.GetObject(bucket, key, rnge)
	if obj != nil {
		obj.VersionID = nullVersion
	}
	return obj, err
}

// HeadObjectVersion heads the object for the "null" version.
func (b singleVersion) HeadObjectVersion(bucket, key string, id gofakes3.VersionID) (*gofakes3.Object, error) {
	if id != nullVersion && id != "" {
		return nil, gofakes3.ErrNoSuchVersion
	}
	obj, err := b.HeadObject(bucket, key)
	if obj != nil {
		obj.VersionID = nullVersion
	}
	return obj, err
}

// DeleteObjectVersion deletes the object for the "null" version.
func (b singleVersion) DeleteObjectVersion(bucket, key string, id gofakes3.VersionID) (gofakes3.ObjectDeleteResult, error) {
	if id != nullVersion {
		return gofakes3.ObjectDeleteResult{}, nil
	}
	return b.DeleteObject(bucket, key)
}

// DeleteMultiVersions deletes the objects named.
func (b singleVersion) DeleteMultiVersions(bucket string, objects ...gofakes3.ObjectID) (gofakes3.MultiDeleteResult, error) {
	keys := make([]string, len(objects))
	for i, o := range objects {
		keys[i] = o.Key
	}
	return b.DeleteMulti(bucket, keys...)
}

// ListBucketVersions lists each current object as its one version.
func (b singleVersion) ListBucketVersions(bucket string, prefix *gofakes3.Prefix, page *gofakes3.ListBucketVersionsPage) (*gofakes3.ListBucketVersionsResult, error) {
	var p gofakes3.ListBucketPage
	if page != nil {
		p = gofakes3.ListBucketPage{Marker: page.KeyMarker, HasMarker: page.HasKeyMarker, MaxKeys: page.MaxKeys}
	}
	list, err := b.ListBucket(bucket, prefix, p)
	if err != nil {
		return nil, err
	}
	res := &gofakes3.ListBucketVersionsResult{Name: bucket, IsTruncated: list.IsTruncated, CommonPrefixes: list.CommonPrefixes}
	for _, c := range list.Contents {
		res.Versions = append(res.Versions, &gofakes3.Version{
			Key: c.Key, VersionID: nullVersion, IsLatest: true, LastModified: c.LastModified, Size: c.Size, ETag: c.ETag,
		})
		res.NextKeyMarker = c.Key
	}
	if res.IsTruncated {
		res.NextVersionIDMarker = nullVersion
	} else {
		res.NextKeyMarker = ""
	}
	return res, nil
}
