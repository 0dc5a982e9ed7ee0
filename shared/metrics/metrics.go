// Package metrics writes s3q's metrics as CloudWatch embedded metric
// format (EMF) log lines: one JSON object per line whose "_aws" member
// tells CloudWatch Logs which of its members are metrics, in which
// namespace and with which dimensions. A Lambda's stdout is its log, so
// writing the line is publishing the metric; there is no API call.
//
//	{"_aws":{"Timestamp":1769590800000,"CloudWatchMetrics":[{"Namespace":"s3q",
//	  "Dimensions":[["service","task_type"]],
//	  "Metrics":[{"Name":"tasks_expired_total","Unit":"Count"}]}]},
//	 "service":"s3q","task_type":"email.send","tasks_expired_total":3}
package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/metrics/catalog"
	"github.com/s3q/s3q/shared/queue"
)

// Catalog returns every metric the Emitter writes, from the one list in
// package catalog that the stack's dashboard and alarms use too.
func Catalog() []catalog.Metric { return catalog.All() }

// DefaultNamespace is the CloudWatch namespace of s3q's metrics.
const DefaultNamespace = "s3q"

// maxValues is the most values one EMF metric may carry in one document.
const maxValues = 100

// Units used here (CloudWatch's names).
const (
	Count        = catalog.Count
	Seconds      = catalog.Seconds
	Milliseconds = catalog.Milliseconds
)

// Metric is one metric of a document: its name, unit and values (one
// value, or up to 100 for a distribution).
type Metric struct {
	Name   string
	Unit   string
	Values []float64
}

// Emitter writes EMF documents to w, one per line. It is safe for
// concurrent use.
type Emitter struct {
	w         io.Writer
	namespace string
	service   string

	mu sync.Mutex
}

// New returns an Emitter writing to w (a Lambda's os.Stdout) in
// namespace (DefaultNamespace when empty). Every metric carries the
// dimension service=s3q, plus its own.
func New(w io.Writer, namespace string) *Emitter {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return &Emitter{w: w, namespace: namespace, service: "s3q"}
}

// Document returns one EMF document: metrics at time at, under the
// dimensions dims (name -> value, added to service), with extra
// properties that are logged but are not metrics. A metric with more
// than 100 values is cut to 100: use Emit, which splits them.
func (e *Emitter) Document(at time.Time, dims map[string]string, metrics []Metric, props map[string]any) ([]byte, error) {
	names := []string{"service"}
	for k := range dims {
		names = append(names, k)
	}
	sort.Strings(names[1:])
	type def struct {
		Name string `json:"Name"`
		Unit string `json:"Unit,omitempty"`
	}
	type directive struct {
		Namespace  string     `json:"Namespace"`
		Dimensions [][]string `json:"Dimensions"`
		Metrics    []def      `json:"Metrics"`
	}
	doc := map[string]any{}
	for k, v := range props {
		doc[k] = v
	}
	d := directive{Namespace: e.namespace, Dimensions: [][]string{names}}
	for _, m := range metrics {
		if len(m.Values) == 0 {
			continue
		}
		d.Metrics = append(d.Metrics, def{Name: m.Name, Unit: m.Unit})
		vals := m.Values
		if len(vals) > maxValues {
			vals = vals[:maxValues]
		}
		if len(vals) == 1 {
			doc[m.Name] = vals[0]
		} else {
			doc[m.Name] = vals
		}
	}
	doc["service"] = e.service
	for k, v := range dims {
		doc[k] = v
	}
	doc["_aws"] = map[string]any{
		"Timestamp":         at.UnixMilli(),
		"CloudWatchMetrics": []directive{d},
	}
	return json.Marshal(doc)
}

// Emit writes the document(s) for metrics: more than 100 values of one
// metric are split over several lines.
func (e *Emitter) Emit(at time.Time, dims map[string]string, metrics []Metric, props map[string]any) error {
	for {
		var now, later []Metric
		for _, m := range metrics {
			if len(m.Values) > maxValues {
				now = append(now, Metric{Name: m.Name, Unit: m.Unit, Values: m.Values[:maxValues]})
				later = append(later, Metric{Name: m.Name, Unit: m.Unit, Values: m.Values[maxValues:]})
			} else {
				now = append(now, m)
			}
		}
		b, err := e.Document(at, dims, now, props)
		if err != nil {
			return err
		}
		e.mu.Lock()
		_, err = fmt.Fprintf(e.w, "%s\n", b)
		e.mu.Unlock()
		if err != nil || len(later) == 0 {
			return err
		}
		metrics, props = later, nil
	}
}

// SweepIncompleteMetric is 1 for a sweep that stopped with work left
// (its time ran out, or an index head was longer than a sweep reads) and
// 0 for one that finished; the stack's alarm watches it.
const SweepIncompleteMetric = catalog.SweepIncomplete

// Sweep writes the metrics of one sweep: SweepIncomplete (1 or 0),
// sweep_duration (ms),
// sweep_requests and sweep_list_requests, tasks_expired (this sweep, all
// types), tasks_near_expiration (deadlines due within the sweep's window,
// from the index heads it read), events_sent, events_failed,
// leases_reclaimed, tasks_dead_lettered, tasks_parked; and one line per
// task type with tasks_expired_total for that type: the expirations whose
// Task Expired event the sweep delivered, whoever expired the task (a
// count per sweep; CloudWatch sums them).
func (e *Emitter) Sweep(rep queue.SweepReport, at time.Time) error {
	one := func(name, unit string, v float64) Metric { return Metric{Name: name, Unit: unit, Values: []float64{v}} }
	props := map[string]any{
		"event": "sweep", "incomplete": rep.Incomplete, "errors": rep.Errors, "queues": rep.Queues,
		"queues_due": rep.QueuesDue, "wakeups_deleted": rep.WakeupsDeleted,
		"expired_by_parent": rep.ExpiredByParent, "cancel_requested": rep.CancelRequested,
		"stale_markers": rep.StaleMarkers, "conflicts": rep.Conflicts, "artifacts_deleted": rep.ArtifactsDeleted,
		"requests_get": rep.Requests.Get + rep.Requests.Head, "requests_put": rep.Requests.Put, "requests_delete": rep.Requests.Delete,
	}
	incomplete := 0.0
	if rep.Incomplete {
		incomplete = 1
	}
	err := e.Emit(at, nil, []Metric{
		one(SweepIncompleteMetric, Count, incomplete),
		one(catalog.SweepDuration, Milliseconds, float64(rep.Duration)/float64(time.Millisecond)),
		one(catalog.SweepRequests, Count, float64(rep.Requests.Total())),
		one(catalog.SweepListRequests, Count, float64(rep.Requests.List)),
		one(catalog.TasksExpired, Count, float64(rep.Expired+rep.ExpiredByParent)),
		one(catalog.TasksNearExpiration, Count, float64(rep.NearExpiration)),
		one(catalog.EventsSent, Count, float64(rep.EventsSent)),
		one(catalog.EventsFailed, Count, float64(rep.EventsFailed)),
		one(catalog.LeasesReclaimed, Count, float64(rep.Reclaimed)),
		one(catalog.TasksDeadLettered, Count, float64(rep.DeadLettered)),
		one(catalog.TasksParked, Count, float64(rep.Parked)),
	}, props)
	if err != nil {
		return err
	}
	types := make([]string, 0, len(rep.ExpiredByType))
	for tt := range rep.ExpiredByType {
		types = append(types, tt)
	}
	sort.Strings(types)
	for _, tt := range types {
		if err := e.TasksExpired(tt, rep.ExpiredByType[tt], at); err != nil {
			return err
		}
	}
	return nil
}

// TasksExpired writes tasks_expired_total for one task type: n tasks of
// that type expired (by a sweep, a claim or by hand).
func (e *Emitter) TasksExpired(taskType string, n int, at time.Time) error {
	return e.Emit(at, map[string]string{"task_type": taskType},
		[]Metric{{Name: catalog.TasksExpiredTotal, Unit: Count, Values: []float64{float64(n)}}}, nil)
}

// DeadLetteredMetric is the metric of tasks that landed in failed, the
// dead-letter state, by task type. The stack's dead-letter alarm watches
// it (a metric filter on every function's log group picks up any line
// carrying it).
const DeadLetteredMetric = catalog.TasksDeadLetteredTotal

// TasksDeadLettered writes tasks_dead_lettered_total for one task type: n
// tasks of that type landed in failed (a worker's last failure, or a
// lapsed lease with its attempts spent). The sweep counts the Task
// Dead-Lettered events it delivered, so each is counted once, or twice if
// a sweep dies between publishing an event and noting it.
func (e *Emitter) TasksDeadLettered(taskType string, n int, at time.Time) error {
	return e.Emit(at, map[string]string{"task_type": taskType},
		[]Metric{{Name: DeadLetteredMetric, Unit: Count, Values: []float64{float64(n)}}}, nil)
}

// SubmitTTL writes the TTL distribution at submit: task_ttl_seconds, one
// value per submitted task of the type that has a deadline (its
// expires_at - created_at, or its ttl when ttl_from is first_attempt).
// Tasks without a deadline are counted in tasks_without_ttl.
func (e *Emitter) SubmitTTL(tasks []queue.Task, at time.Time) error {
	byType := map[string][]float64{}
	none := map[string]int{}
	for _, t := range tasks {
		switch {
		case t.ExpiresAt != nil:
			byType[t.TaskType] = append(byType[t.TaskType], t.ExpiresAt.Sub(t.CreatedAt).Seconds())
		case t.TTL != nil:
			byType[t.TaskType] = append(byType[t.TaskType], t.TTL.Std().Seconds())
		default:
			none[t.TaskType]++
		}
	}
	types := make([]string, 0, len(byType)+len(none))
	for tt := range byType {
		types = append(types, tt)
	}
	for tt := range none {
		if byType[tt] == nil {
			types = append(types, tt)
		}
	}
	sort.Strings(types)
	for _, tt := range types {
		var ms []Metric
		if vals := byType[tt]; len(vals) > 0 {
			ms = append(ms, Metric{Name: catalog.TaskTTLSeconds, Unit: Seconds, Values: vals})
		}
		if n := none[tt]; n > 0 {
			ms = append(ms, Metric{Name: catalog.TasksWithoutTTL, Unit: Count, Values: []float64{float64(n)}})
		}
		if err := e.Emit(at, map[string]string{"task_type": tt}, ms, nil); err != nil {
			return err
		}
	}
	return nil
}

// PushDeliveryFailuresMetric is the metric of push deliveries that did
// not complete their task: the target failed it (4xx, 429, 5xx, a
// function error, an unreachable target) or did not answer in time. The
// stack's delivery-failure alarm watches it.
const PushDeliveryFailuresMetric = catalog.PushDeliveryFailuresTotal

// Dispatch writes the metrics of one dispatch run for a push queue:
// push_deliveries_total (tasks handed to the target),
// push_delivery_failures_total (failed or timed out), and
// push_outcome_errors_total (outcomes that could not be written).
func (e *Emitter) Dispatch(queueName string, delivered, failures, errs int, at time.Time) error {
	return e.Emit(at, map[string]string{"queue": queueName}, []Metric{
		{Name: catalog.PushDeliveriesTotal, Unit: Count, Values: []float64{float64(delivered)}},
		{Name: PushDeliveryFailuresMetric, Unit: Count, Values: []float64{float64(failures)}},
		{Name: catalog.PushOutcomeErrorsTotal, Unit: Count, Values: []float64{float64(errs)}},
	}, nil)
}

// Activity is what one API request or one timer run did, for Activity.
type Activity struct {
	// Submitted, Completed and Failed count tasks created, completed and
	// failed (an attempt) by it.
	Submitted, Completed, Failed int
	// S3Requests is the S3 requests it made.
	S3Requests int64
}

// Activity writes one line with what a request or a run did:
// tasks_submitted_total, tasks_completed_total, tasks_failed_total and
// s3_requests_total, each only when not zero (nothing at all when every
// one is). CloudWatch sums them per period: tasks per minute, and S3
// requests per task as s3_requests_total / tasks_submitted_total.
func (e *Emitter) Activity(a Activity, at time.Time) error {
	var ms []Metric
	add := func(name string, v float64) {
		if v != 0 {
			ms = append(ms, Metric{Name: name, Unit: Count, Values: []float64{v}})
		}
	}
	add(catalog.TasksSubmittedTotal, float64(a.Submitted))
	add(catalog.TasksCompletedTotal, float64(a.Completed))
	add(catalog.TasksFailedTotal, float64(a.Failed))
	add(catalog.S3RequestsTotal, float64(a.S3Requests))
	if len(ms) == 0 {
		return nil
	}
	return e.Emit(at, nil, ms, nil)
}

// QueueStats writes one queue's gauges: queue_depth (its live tasks) and
// oldest_pending_age_seconds (how long its oldest due pending task has
// waited; 0 when none is due).
func (e *Emitter) QueueStats(queueName string, depth int, oldestPending time.Duration, at time.Time) error {
	return e.Emit(at, map[string]string{"queue": queueName}, []Metric{
		{Name: catalog.QueueDepth, Unit: Count, Values: []float64{float64(depth)}},
		{Name: catalog.OldestPendingAgeSeconds, Unit: Seconds, Values: []float64{oldestPending.Seconds()}},
	}, nil)
}
