package faultproxy_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
	"github.com/s3q/s3q/shared/store"
)

// A create-only PUT whose answer is lost: the write lands, the caller gets
// a retryable error, and a re-read shows the object.
func ExampleProxy_Inject() {
	ctx := context.Background()
	srv, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	p, st, err := faultproxy.Front(ctx, srv, "example/", faultproxy.Options{})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	shot, _ := p.Inject(faultproxy.LostAnswer, "PUT tasks/* create", 1)
	_, err = st.PutIfAbsent(ctx, "tasks/a.json", []byte(`{"id":"a"}`))
	fmt.Println("retryable:", errors.Is(err, store.ErrRetryable), "fired:", shot.Fired())
	obj, err := st.Get(ctx, "tasks/a.json")
	fmt.Println("stored:", string(obj.Body), err)
	fmt.Println(p.Counts())
	// Output:
	// retryable: true fired: true
	// stored: {"id":"a"} <nil>
	// requests=2 lost_answer=1
}
