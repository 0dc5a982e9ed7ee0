package queue

import (
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/s3q/s3q/shared/wire"
)

// NewID returns a fresh task id, a lowercase UUIDv7 (wire.NewID).
func NewID(now time.Time) string { return wire.NewID(now) }

// DerivedID returns the UUIDv7 for a name at a time (wire.DerivedID).
func DerivedID(at time.Time, name string) string { return wire.DerivedID(at, name) }

// idTime returns the creation time encoded in a UUIDv7 id (millisecond
// precision), or the zero time when id is malformed.
func idTime(id string) time.Time {
	if len(id) != 36 {
		return time.Time{}
	}
	raw, err := hex.DecodeString(id[0:8] + id[9:13])
	if err != nil {
		return time.Time{}
	}
	var ms [8]byte
	copy(ms[2:], raw)
	return time.UnixMilli(int64(binary.BigEndian.Uint64(ms[:]))).UTC()
}
