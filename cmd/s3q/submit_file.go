package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// fileLine is one submit request of a --file, with its line number.
type fileLine struct {
	line int
	req  wire.SubmitRequest
}

// fileSummary is what a --file run did; its JSON is the answer of
// `s3q submit --file -o json`.
type fileSummary struct {
	Landed      int  `json:"landed"`       // tasks this run created
	Replayed    int  `json:"replayed"`     // lines whose task an earlier run had created
	Refused     int  `json:"refused"`      // lines the API refused (see results)
	Deduped     int  `json:"deduplicated"` // lines whose dedup_key a live task held
	Lines       int  `json:"lines"`        // submit requests in the file
	Interrupted bool `json:"interrupted"`  // stopped by Ctrl-C before the end
	// Results holds one item per line sent, in file order.
	Results []fileResult `json:"results"`
}

// fileResult is the answer for one line, its error in the API's shape.
type fileResult struct {
	Line         int          `json:"line"`
	Task         *client.Task `json:"task,omitempty"`
	Replayed     bool         `json:"replayed,omitempty"`
	Deduplicated bool         `json:"deduplicated,omitempty"`
	Error        *errorBody   `json:"error,omitempty"`
}

func (s *fileSummary) String() string {
	out := fmt.Sprintf("landed %d, replayed %d, refused %d", s.Landed, s.Replayed, s.Refused)
	if s.Deduped > 0 {
		out += fmt.Sprintf(", deduplicated %d", s.Deduped)
	}
	return out
}

// fileIDSpace is the span of the time part of the ids derived for a
// file's lines (about 8.7 years from 2020): a file's lines take
// consecutive milliseconds from a start its content picks, so they sort
// in file order.
var fileIDEpoch = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

const fileIDSpace = 1 << 38 // milliseconds

// fileLineID is the task id of a --file line without an "id": a UUIDv7
// derived from the file's content (its SHA-256), the queue and the line
// number, so that running the same file again submits the same ids and
// makes no second task. Its time part is not the submit time
// (created_at is).
func fileLineID(sum [32]byte, q string, line int) string {
	start := binary.BigEndian.Uint64(sum[:8]) % (fileIDSpace - 1<<24)
	at := fileIDEpoch.Add(time.Duration(start+uint64(line)) * time.Millisecond)
	return queue.DerivedID(at, "s3q submit --file\x00"+hex.EncodeToString(sum[:])+"\x00"+q+"\x00"+strconv.Itoa(line))
}

// readFileLines reads a JSON Lines file of submit requests and gives each
// line without an "id" its derived one. A line that is not a submit
// request refuses the whole file, naming its line and column: nothing is
// sent (fixing it changes the file, hence every derived id).
func readFileLines(r io.Reader, path, q string) ([]fileLine, error) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(raw)
	var lines []fileLine
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), queue.MaxInputBytes+64<<10)
	for n := 1; sc.Scan(); n++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if err := checkJSON(text); err != nil {
			return nil, flagErr("file", "", "%s: line %d is not JSON: %v", path, n, err)
		}
		var req wire.SubmitRequest
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, flagErr("file", "", "%s: line %d is not a submit request: %v", path, n, err)
		}
		if req.ID == "" {
			lq := q
			if req.Queue != "" {
				lq = req.Queue
			}
			req.ID = fileLineID(sum, lq, n)
		}
		lines = append(lines, fileLine{line: n, req: req})
	}
	return lines, sc.Err()
}

// submitFile submits a JSON Lines file in batches, with a progress bar,
// and reports landed, replayed and refused lines. Ctrl-C stops it between
// batches (a batch in flight finishes) with the summary so far, exit 130;
// running the same command again submits the rest and replays the rest.
func submitFile(ctx context.Context, e *env, c *client.Client, path string) error {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return flagErr("file", "tasks.jsonl", "%v", err)
		}
		defer f.Close()
		r = f
	}
	lines, err := readFileLines(r, path, e.queue)
	if err != nil {
		return err
	}
	sum := &fileSummary{Lines: len(lines), Results: []fileResult{}}
	bar := newProgress(e.stderr, len(lines), "submitting")
	var runErr error
	for i := 0; i < len(lines); i += queue.MaxBatch {
		if ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
		chunk := lines[i:min(len(lines), i+queue.MaxBatch)]
		reqs := make([]wire.SubmitRequest, len(chunk))
		for j, l := range chunk {
			reqs[j] = l.req
		}
		// A batch sent is let finish, so that the summary says what landed.
		items, err := c.SubmitBatch(context.WithoutCancel(ctx), reqs)
		for j, it := range items {
			sum.add(e, chunk[j].line, it)
		}
		bar.add(len(items))
		if err != nil {
			runErr = fmt.Errorf("batch from line %d: %w", chunk[0].line, err)
			break
		}
	}
	bar.done()
	if e.output == "json" {
		if err := printJSON(e.stdout, sum); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.stdout, sum.String())
	}
	switch {
	case runErr != nil:
		return runErr
	case sum.Interrupted:
		return &cliError{exit: exitInterrupted, code: "interrupted", reported: e.output == "json",
			message: fmt.Sprintf("interrupted after %d of %d lines (%s); run the same command again to submit the rest: the lines sent are replayed, not submitted twice", sum.Landed+sum.Replayed+sum.Refused+sum.Deduped, sum.Lines, sum)}
	case sum.Refused > 0:
		return &cliError{exit: exitError, code: "refused", reported: e.output == "json",
			message: fmt.Sprintf("%d of %d lines refused (above); put the fixed lines in a file of their own: editing this one gives every line a new id", sum.Refused, sum.Lines)}
	}
	return nil
}

// add counts one line's answer, and reports a refused one on stderr.
func (s *fileSummary) add(e *env, line int, it client.BatchItem) {
	switch {
	case it.Error != nil:
		s.Refused++
		fmt.Fprintf(e.stderr, "\rline %d: refused: %s %s%s\n", line, it.Error.Code, it.Error.Message, fieldNote(it.Error.Field))
	case it.Deduplicated:
		s.Deduped++
	case it.Replayed:
		s.Replayed++
	default:
		s.Landed++
	}
	r := fileResult{Line: line, Task: it.Task, Replayed: it.Replayed, Deduplicated: it.Deduplicated}
	if it.Error != nil {
		r.Error = &errorBody{Code: it.Error.Code, Message: it.Error.Message, Field: it.Error.Field}
	}
	s.Results = append(s.Results, r)
}

func fieldNote(f string) string {
	if f == "" {
		return ""
	}
	return " (field " + f + ")"
}
