package queue

import (
	"slices"
	"strconv"
	"strings"
)

// Priorities. A task's priority is 1 (highest) to 5 (lowest), 3 when
// nothing sets it: the numbers and the default of Temporal's priority
// keys, and River's direction (1 first). Five levels are enough for
// "page someone", "user waiting", normal, "when there is time" and bulk;
// a small fixed range keeps a queue's claim indexes at ten folders, which
// one LIST reads while they are sparse.
//
// Among the due tasks of a queue a claim (and so a push delivery) takes
// the highest priority first, strictly: a priority is visited only when
// every higher one has nothing due for the claim (River's rule, not
// Asynq's weights). Within one priority the order is the one without
// priorities: earliest deadline first, then oldest available_at. A task
// not yet due waits for its time whatever its priority. A low priority
// can starve while higher ones keep a queue busy; a queue whose low
// priority must progress gets a queue of its own (or a higher priority).
const (
	// MinPriority is the highest priority.
	MinPriority = 1
	// MaxPriority is the lowest priority.
	MaxPriority = 5
	// DefaultPriority is the priority of a task nothing gives one.
	DefaultPriority = 3
)

// validPriority checks a priority given in field: 0 (unset, the
// default applies) or MinPriority to MaxPriority.
func validPriority(field string, p int) error {
	if p != 0 && (p < MinPriority || p > MaxPriority) {
		return invalid(field, "must be between %d (highest) and %d (lowest); absent means the queue's default, else %d", MinPriority, MaxPriority, DefaultPriority)
	}
	return nil
}

// ValidatePriority checks a priority given in field (0: unset).
func ValidatePriority(field string, p int) error { return validPriority(field, p) }

// priority returns the task's priority: DefaultPriority for a record
// written before priorities (0).
func (t *Task) priority() int {
	if t.Priority == 0 {
		return DefaultPriority
	}
	return t.Priority
}

// EffectivePriority returns the task's priority, DefaultPriority when
// the record has none.
func (t Task) EffectivePriority() int { return t.priority() }

// priorityRoot returns the claim index of priority p inside root (a
// queue's deadlineRoot or readyRoot): root itself for the default
// priority, so every key written before priorities is read as it was,
// and root/-p{p}/ for the others. "-" sorts before the shards' hex
// digits, so a LIST of a root from its start reads its priority folders,
// highest first, and then its own shards: a backlog of the default
// priority is read last, and the sweep's LIST of deadlineRoot reads every
// priority's deadlines. The roots in key order are deadline/-p1/ ..
// deadline/-p5/, deadline/, ready/-p1/ .. ready/-p5/, ready/.
func priorityRoot(root string, p int) string {
	if p == 0 || p == DefaultPriority {
		return root
	}
	return root + "-p" + strconv.Itoa(p) + "/"
}

// priorityDirOf returns the priority folder ("-p1/") rest starts with,
// rest being a key below a deadline or ready root, or "" for a key of
// the default priority.
func priorityDirOf(rest string) string {
	if len(rest) >= 4 && rest[0] == '-' && rest[1] == 'p' && rest[3] == '/' && rest[2] >= '0'+MinPriority && rest[2] <= '0'+MaxPriority && rest[2] != '0'+DefaultPriority {
		return rest[:4]
	}
	return ""
}

// indexRoots returns a queue's claim index roots in claim order: for
// each priority, highest first, its deadline index then its ready index.
func indexRoots(queue string) []string {
	out := make([]string, 0, 2*(MaxPriority-MinPriority+1))
	for p := MinPriority; p <= MaxPriority; p++ {
		out = append(out, priorityRoot(deadlineRoot(queue), p), priorityRoot(readyRoot(queue), p))
	}
	return out
}

// keyOrder returns the indexes of roots (indexRoots) in the order of
// their keys: deadline/'s priority folders, then its own shards, then the
// same of ready/.
func keyOrder(roots []string) []int {
	order := make([]int, len(roots))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(rootStart(roots[a]), rootStart(roots[b])) })
	return order
}

// isDefaultRoot reports whether root is a default priority's index
// (deadlineRoot or readyRoot), whose folder holds the other priorities'.
func isDefaultRoot(root string) bool {
	return strings.HasSuffix(root, "/"+dirDeadline) || strings.HasSuffix(root, "/"+dirReady)
}

// rootStart returns the first key a claim index root's own markers may
// have: past the priority folders of a default root.
func rootStart(root string) string {
	if isDefaultRoot(root) {
		return root + "0"
	}
	return root
}

// headAfter is the start-after key that lists a root's own markers from
// their start: past the priority folders ("-p5/" < ".") of a default
// root, "" for a priority folder.
func headAfter(root string) string {
	if isDefaultRoot(root) {
		return root + "."
	}
	return ""
}

// runAfter is the start-after key of a listing of a queue's claim
// indexes (their parent) that starts with root.
func runAfter(root string) string {
	if isDefaultRoot(root) {
		return headAfter(root)
	}
	return strings.TrimSuffix(root, "/")
}

// rootEnd returns a start-after key past every key of the claim index
// root (and, for a default root, of the priority folders in it), before
// the next root's.
func rootEnd(root string) string { return root + "~" }
