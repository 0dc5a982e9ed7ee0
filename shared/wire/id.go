package wire

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// NewID returns a fresh task id: a lowercase UUIDv7 whose 48-bit
// millisecond timestamp is taken from now, so ids sort by creation.
func NewID(now time.Time) string {
	var b [16]byte
	_, _ = rand.Read(b[6:])
	return formatID(now, b)
}

// DerivedID returns the UUIDv7 for a name at a time: the same (at, name)
// always gives the same id, and its timestamp is at. A schedule derives the
// id of the task it fires at a cron time from (schedule id, fire time), so
// that a retried or racing fire can never make a second task.
func DerivedID(at time.Time, name string) string {
	sum := sha256.Sum256([]byte(name + "\x00" + at.UTC().Format(time.RFC3339Nano)))
	var b [16]byte
	copy(b[6:], sum[:10])
	return formatID(at, b)
}

func formatID(now time.Time, b [16]byte) string {
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(now.UnixMilli()))
	copy(b[0:6], ms[2:8])
	b[6] = (b[6] & 0x0f) | 0x70 // version 7
	b[8] = (b[8] & 0x3f) | 0x80 // RFC 4122 variant
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:36], b[10:16])
	return string(s[:])
}
