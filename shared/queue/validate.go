package queue

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/internal/jsonval"
)

// Limits on what a request may carry. Anything a user names that becomes
// part of an S3 key is checked against a strict pattern first: no "/", no
// "..", no control characters, no over-long names.
const (
	MaxInputBytes    = 256 << 10 // inline input and output
	MaxErrorBytes    = 8 << 10   // a failure message
	MaxDedupKeyBytes = 512
	MaxWorkerIDBytes = 128
	MaxAttemptsLimit = 1000
	MaxLease         = 12 * time.Hour // like SQS's visibility timeout limit
	MaxBatch         = 500            // tasks in one batch submit
)

// maxClaim is the most tasks one claim takes (ClaimRequest.MaxTasks).
const maxClaim = 100

var (
	reQueue    = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	reTaskType = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
	reID       = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
)

// ValidateID checks a task id before it becomes a key: a lowercase UUIDv7.
func ValidateID(id string) error {
	if err := validID(id); err != nil {
		return &ValidationError{Field: "id", Message: err.Error(), Err: ErrInvalidInput}
	}
	return nil
}

func validID(id string) error {
	if !reID.MatchString(id) {
		return fmt.Errorf("%q is not a task id (a lowercase UUIDv7)", clip.Input(id))
	}
	return nil
}

// ValidateQueueName checks a queue name: 1–64 of A-Z a-z 0-9 _ -.
func ValidateQueueName(name string) error {
	if !reQueue.MatchString(name) {
		return invalid("queue", "%q is not a queue name: use 1-64 of A-Z a-z 0-9 _ -", clip.Input(name))
	}
	return nil
}

// ValidateTaskType checks a task type: 1–128 of A-Z a-z 0-9 _ . : -, no "..".
func ValidateTaskType(field, name string) error {
	if name == "" {
		return invalid(field, "is required")
	}
	if !reTaskType.MatchString(name) || strings.Contains(name, "..") {
		return invalid(field, "%q is not a task type: use 1-128 of A-Z a-z 0-9 _ . : - and no '..'", clip.Input(name))
	}
	return nil
}

// validText checks free text that is stored but never becomes a key.
func validText(field, s string, max int) error {
	if len(s) > max {
		return &ValidationError{Field: field, Message: fmt.Sprintf("is %d bytes, over the limit of %d", len(s), max), Err: ErrTooLarge}
	}
	for _, r := range s {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return invalid(field, "contains a control character")
		}
	}
	return nil
}

// validJSON checks an inline JSON document: valid JSON in UTF-8, no
// object with a key twice, and within MaxInputBytes.
func validJSON(field string, raw json.RawMessage) error {
	if len(raw) == 0 {
		return nil
	}
	if len(raw) > MaxInputBytes {
		return &ValidationError{Field: field, Message: fmt.Sprintf("is %d bytes, over the inline limit of %d (256 KiB); store large data as an artifact", len(raw), MaxInputBytes), Err: ErrTooLarge}
	}
	if err := jsonval.Check(raw); err != nil {
		// Not UTF-8, a key twice (which encoding/json would resolve
		// silently, last one wins), or not JSON at all.
		return invalid(field, "%s", err)
	}
	return nil
}

// validTime checks an absolute time fits the key format.
func validTime(field string, t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return invalid(field, "%s is out of range (2000-01-01 to 9999-12-31)", t.Format(time.RFC3339))
	}
	return nil
}
