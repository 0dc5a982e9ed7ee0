package queue

import (
	"fmt"
	"github.com/s3q/s3q/shared/internal/clip"
	"strings"
)

// Task references. Ids are unique within a queue only, so a task is named
// across queues by its reference, {queue}/{id}: what the CLI prints and
// accepts. Routes name the queue in their path and take the bare id.

// Ref returns the reference of the task id in queue: {queue}/{id}.
func Ref(queue, id string) string { return queue + "/" + id }

// Ref returns the task's reference: {queue}/{id}.
func (t Task) Ref() string { return Ref(t.Queue, t.ID) }

// ParseRef splits a task reference, {queue}/{id}, or a bare id, which is
// in defaultQueue. Both parts are validated; a bare id with no
// defaultQueue is a *ValidationError of field id.
func ParseRef(ref, defaultQueue string) (queue, id string, err error) {
	queue, id, ok := strings.Cut(ref, "/")
	if !ok {
		queue, id = defaultQueue, ref
		if queue == "" {
			if err := ValidateID(id); err != nil {
				return "", "", err
			}
			return "", "", invalid("id", "%s names no queue: give {queue}/{id}", id)
		}
	}
	if ValidateQueueName(queue) != nil {
		return "", "", invalid("id", "%q is not a task id or a reference {queue}/{id}", clip.Input(ref))
	}
	if err := ValidateID(id); err != nil {
		return "", "", err
	}
	return queue, id, nil
}

// locate resolves what an operation by id names. In a view of one queue
// (In) it is a bare id, or a reference into that queue; a reference into
// another queue is ErrNotFound, as an unknown id is. Outside a view it is
// a reference, or a bare id of DefaultQueue.
func (q *Queue) locate(ref string) (queue, id string, err error) {
	def := q.scope
	if def == "" {
		def = DefaultQueue
	}
	queue, id, err = ParseRef(ref, def)
	if err != nil {
		return "", "", err
	}
	if q.scope != "" && queue != q.scope {
		return "", "", fmt.Errorf("task %s in queue %s: %w", id, q.scope, ErrNotFound)
	}
	return queue, id, nil
}
