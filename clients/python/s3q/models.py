"""The API's JSON, typed: generated from shared/api/openapi.json.

Do not edit: run ``python3 scripts/genmodels.py`` (``make test`` checks that
this file matches the document).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, NamedTuple, Optional, Tuple, TypedDict, Union

JSON = Any
"""Any JSON value."""


BulkOp = Literal["purge", "retry", "cancel", "expire"]
MissedRuns = Literal["skip", "catch_up"]
Overlap = Literal["allow", "skip"]
Status = Literal["pending", "running", "completed", "failed", "cancelled", "expired", "archived"]
TTLFrom = Literal["submission", "first_attempt"]
Target = JSON  # a queue's push target: a Lambda function, or an https URL with the SSM parameter that holds the secret signing its deliveries


class _ArtifactRequired(TypedDict):
    expires_at: str
    name: str
    """The artifact's name."""
    task_id: str
    """A task id: a lowercase UUIDv7."""


class Artifact(_ArtifactRequired, total=False):
    """The Artifact object of the API."""

    download_url: str
    headers: Dict[str, List[str]]
    """Headers to send as they are."""
    upload_url: str


class ArtifactReply(TypedDict):
    """The ArtifactReply object of the API."""

    artifact: Artifact


class ArtifactRequest(TypedDict):
    """The ArtifactRequest object of the API."""

    name: str
    size: int
    """The artifact's size in bytes: the upload must send exactly that many."""


class BatchReply(TypedDict):
    """The BatchReply object of the API."""

    results: List[BatchResult]


class BatchRequest(TypedDict):
    """The BatchRequest object of the API."""

    tasks: List[BatchTask]
    """The tasks, each as POST /queues/{queue}/tasks takes it (without wait); an invalid one gets an error in its result (field tasks[i]), the others are still submitted."""


class BatchResult(TypedDict, total=False):
    """The BatchResult object of the API."""

    deduplicated: bool
    error: JSON
    """Why this item was not submitted (field tasks[i].…)."""
    replayed: bool
    task: Task


class _BatchTaskRequired(TypedDict):
    task_type: str


class BatchTask(_BatchTaskRequired, total=False):
    """The BatchTask object of the API."""

    dedup_key: str
    """At most one live (pending or running) task of the queue holds a dedup key."""
    delay: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    expires_at: str
    id: str
    """A lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits). Defaults to one the server makes."""
    input: JSON
    """The task's input: any JSON value, at most 256 KiB."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    on_parent_expired: Literal["run", "cancel"]
    """What happens to this task when its parent expires: run (the default) or cancel."""
    parent_id: str
    """The parent task: when it expires, this task is expired (pending) or asked to cancel (running, with on_parent_expired cancel)."""
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    queue: str
    """The path's queue, or left out."""
    schedule_at: str
    timeout: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    traceparent: str
    """A W3C traceparent (00-{trace id}-{parent id}-{flags}), kept on the task and handed to its handler; a submit's traceparent header gives it too."""
    tracestate: str
    """A W3C tracestate, with traceparent; a submit's tracestate header gives it too."""
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom
    ttl_seconds: int
    """The time to live in seconds (ttl as a number)."""


class _BulkReplyRequired(TypedDict):
    changed: int
    """Tasks changed (on a dry run: that would be)."""
    dry_run: bool
    matched: int
    """Tasks the filter chose in this call."""
    op: BulkOp
    queue: str
    status: Status
    task_ids: List[str]


class BulkReply(_BulkReplyRequired, total=False):
    """The BulkReply object of the API."""

    next_cursor: str
    """Continue with it; absent once every task of the status was examined."""
    skipped: List[BulkSkip]


class BulkRequest(TypedDict, total=False):
    """The BulkRequest object of the API."""

    cursor: str
    """The next_cursor of the previous call."""
    dry_run: bool
    """Report what would change, write nothing."""
    limit: int
    """Most tasks changed by this call; 0 or absent: 100."""
    older_than: Union[str, float]
    """Only tasks last changed (updated_at) at least this long ago: a duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    status: Status
    task_type: str
    """Only tasks of this type."""


class BulkSkip(TypedDict):
    """The BulkSkip object of the API."""

    id: str
    """A task id: a lowercase UUIDv7."""
    reason: str


class CancelAckRequest(TypedDict):
    """The CancelAckRequest object of the API."""

    lease_token: str
    """The token of the lease, from the claim."""


class ClaimReply(TypedDict):
    """The ClaimReply object of the API."""

    tasks: List[Claimed]


class ClaimRequest(TypedDict, total=False):
    """The ClaimRequest object of the API."""

    lease_for: Union[str, float]
    """The lease's length from now: a duration such as 90s, 30m, 1h or 7d, or a number of seconds; more than 0 and at most 12h. Defaults to the task's timeout."""
    max_tasks: int
    """The most tasks to claim at once; defaults to 1."""
    queue: str
    """The path's queue, or left out."""
    task_types: List[str]
    wait: Union[str, float]
    """A duration or a number of seconds to long-poll for; only POST /queues/{queue}/claim/wait waits, the plain route refuses a wait over 0 (400 naming wait)."""
    worker_id: str


class Claimed(TypedDict):
    """The Claimed object of the API."""

    lease: Lease
    task: Task


class _CompleteRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class CompleteRequest(_CompleteRequestRequired, total=False):
    """The CompleteRequest object of the API."""

    output: JSON
    """The task's output: any JSON value."""


class _CountsRequired(TypedDict):
    cancelled: int
    delayed: int
    """Live, not available yet."""
    expired: int
    failed: int
    live: int
    """Pending or running."""


class Counts(_CountsRequired, total=False):
    """The Counts object of the API."""

    at_least: bool
    """A count stopped at 10 LIST pages: capped names which."""
    capped: List[str]
    """The counts that stopped at 10 LIST pages (live, failed, cancelled, expired, completed), each a lower bound; the others are exact, and completed is absent while live is capped."""
    completed: int
    """Completed or archived: present where the bucket layout keeps each queue's records apart."""
    running: int
    """Slots held (queues with max_concurrency)."""


Empty = TypedDict(
    'Empty',
    {
    },
    total=True,
)


class _ErrorRequired(TypedDict):
    code: Literal["already_exists", "conflict", "deadline_exceeded", "internal", "invalid_input", "invalid_lease_duration", "invalid_state", "lease_expired", "lease_mismatch", "method_not_allowed", "not_found", "not_running", "queue_not_empty", "queue_not_found", "throttled", "too_large", "too_many_queues", "too_many_schedules", "too_many_waits"]
    """What went wrong, one of a fixed set; each goes with one HTTP status."""
    message: str


class Error(_ErrorRequired, total=False):
    """The Error object of the API."""

    field: str
    """The request field at fault, in its JSON spelling (tasks[3].ttl for a batch item's); body for the body as a whole (not JSON, not an object, too large), query for the query string; always present on a 400."""


class _FailRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class FailRequest(_FailRequestRequired, total=False):
    """The FailRequest object of the API."""

    error: str
    """The failure message, kept as last_error."""
    retryable: bool
    """Whether another attempt may succeed. Defaults to true."""


class _FireRequired(TypedDict):
    fire_time: str
    fired_at: str
    schedule_id: str


class Fire(_FireRequired, total=False):
    """The Fire object of the API."""

    error: str
    missed: int
    """Earlier due times (up to 1000) not fired because of missed_runs."""
    running_task_id: str
    """The task of the previous fire, still pending or running."""
    skipped: Literal["overlap", "invalid"]
    """Why no task was submitted: overlap (the task in running_task_id was still pending or running) or invalid (the template no longer makes a valid task; error says why)."""
    task_id: str
    """The task the fire submitted (absent when skipped)."""
    trigger: bool
    """True for a fire made by POST …/trigger, not by the cron."""


class FireReply(TypedDict):
    """The FireReply object of the API."""

    fire: Fire


class _HeartbeatRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class HeartbeatRequest(_HeartbeatRequestRequired, total=False):
    """The HeartbeatRequest object of the API."""

    lease_for: Union[str, float]
    """The lease's length from now: a duration such as 90s, 30m, 1h or 7d, or a number of seconds; more than 0 and at most 12h. Defaults to the task's timeout."""


class _HistoryRequired(TypedDict):
    versions: List[TaskVersion]


class History(_HistoryRequired, total=False):
    """The History object of the API."""

    next_cursor: str
    """The cursor of the next page; absent on the last."""


class Lease(TypedDict):
    """The Lease object of the API."""

    expires_at: str
    """The lease lapses then unless extended by a heartbeat."""
    task_id: str
    """A task id: a lowercase UUIDv7."""
    token: str
    """The lease token: lease operations (heartbeat, complete, fail, reschedule, cancel-ack) send it as lease_token."""


class _OpenAPIRequired(TypedDict):
    components: Dict[str, JSON]
    info: Dict[str, JSON]
    openapi: str
    paths: Dict[str, JSON]


class OpenAPI(_OpenAPIRequired, total=False):
    """The OpenAPI object of the API."""

    security: List[Dict[str, JSON]]
    servers: List[Dict[str, JSON]]
    tags: List[Dict[str, JSON]]
    webhooks: Dict[str, JSON]


class PushDelivery(TypedDict):
    """The PushDelivery object of the API."""

    deadline: str
    """An RFC 3339 date-time in UTC, a little before the lease ends (a tenth of the lease, at most 2s, before it): answer by then, or the delivery is cut off and the lease lapses."""
    lease: Lease
    task: Task


class _QueueRequired(TypedDict):
    created_at: str
    name: str
    updated_at: str


class Queue(_QueueRequired, total=False):
    """The Queue object of the API."""

    auto_declared: bool
    """The queue was declared by a submit (auto_declare)."""
    burst: int
    """How many tasks may start at once after a quiet spell, with max_per_second; absent: one second's worth (max_per_second rounded up), at least 1."""
    counts: Counts
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    max_concurrency: int
    """The most tasks of the queue running at once; 0 or absent: no limit."""
    max_per_second: float
    """The most tasks of the queue started a second, by every claim and push delivery together (fractions allowed: 0.5 is one every 2 seconds); a claim held back answers 204 with Retry-After and S3q-Retry-After-Ms; absent: no limit."""
    max_schedules: int
    """The most schedules that fire into the queue (409 too_many_schedules past it); 0 or absent: 100."""
    paused: bool
    """Claims and push deliveries take nothing from a paused queue; submits go on."""
    paused_at: str
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    shards: int
    """The claim index's key ranges, fixed at the first declaration."""
    target: Target
    timeout: str
    """A duration such as 90s, 30m, 1h or 7d."""
    ttl: str
    """A duration such as 90s, 30m, 1h or 7d."""
    ttl_from: TTLFrom


class _QueueListRequired(TypedDict):
    queues: List[Queue]


class QueueList(_QueueListRequired, total=False):
    """The QueueList object of the API."""

    next_cursor: str
    """The cursor of the next page; absent on the last."""


class QueueReply(TypedDict):
    """The QueueReply object of the API."""

    queue: Queue


class QueueRequest(TypedDict, total=False):
    """The QueueRequest object of the API."""

    burst: int
    """How many tasks may start at once after a quiet spell, with max_per_second; absent: one second's worth (max_per_second rounded up), at least 1."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    max_concurrency: int
    max_per_second: float
    """The most tasks of the queue started a second, by every claim and push delivery together (fractions allowed: 0.5 is one every 2 seconds); a claim held back answers 204 with Retry-After and S3q-Retry-After-Ms; absent: no limit."""
    max_schedules: int
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    shards: int
    target: Target
    timeout: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom


class RecentCounts(TypedDict):
    """The RecentCounts object of the API."""

    cancelled: int
    expired: int
    failed: int
    window_seconds: int


class _RescheduleRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class RescheduleRequest(_RescheduleRequestRequired, total=False):
    """The RescheduleRequest object of the API."""

    delay: Union[str, float]
    """Until the task is available again. Defaults to 0 (now)."""
    extend_expiration: Union[str, float]
    """Moves the task's deadline later. Defaults to 0."""


class _ScheduleRequired(TypedDict):
    created_at: str
    cron: str
    """5 fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @weekly, @monthly, @yearly, @every 15m)."""
    enabled: bool
    """False while paused."""
    id: str
    last_run_at: Optional[str]
    """The fire time of the last fire that submitted a task; null before the first."""
    missed_runs: MissedRuns
    next_run_at: Optional[str]
    """The next fire time; null while paused. It may be in the past when the next tick has yet to fire it."""
    next_runs: List[str]
    """The next 5 fire times from next_run_at on (empty while paused)."""
    overlap: Overlap
    queue: str
    task_type: str
    timezone: str
    """The IANA time zone the expression is read in."""
    updated_at: str
    version: int
    """Bumped by every write of the definition."""


class Schedule(_ScheduleRequired, total=False):
    """The Schedule object of the API."""

    catch_up_window: str
    """How far back missed_runs catch_up goes."""
    input: JSON
    """The task's input: any JSON value, at most 256 KiB."""
    last_task_id: str
    """The task the last fire submitted."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    ttl: str
    """A duration such as 90s, 30m, 1h or 7d."""
    ttl_from: TTLFrom


class _ScheduleHistoryRequired(TypedDict):
    fires: List[Fire]


class ScheduleHistory(_ScheduleHistoryRequired, total=False):
    """The ScheduleHistory object of the API."""

    next_cursor: str
    """The cursor of the next page; absent on the last."""


class _ScheduleListRequired(TypedDict):
    schedules: List[Schedule]


class ScheduleList(_ScheduleListRequired, total=False):
    """The ScheduleList object of the API."""

    next_cursor: str
    """The cursor of the next page; absent on the last."""


class ScheduleReply(TypedDict):
    """The ScheduleReply object of the API."""

    schedule: Schedule


class _ScheduleRequestRequired(TypedDict):
    cron: str
    task_type: str


class ScheduleRequest(_ScheduleRequestRequired, total=False):
    """The ScheduleRequest object of the API."""

    catch_up_window: Union[str, float]
    """How far back missed_runs catch_up goes; only with catch_up. Defaults to 24h."""
    enabled: bool
    """False to create a paused schedule. Defaults to true on create and to unchanged on replace."""
    id: str
    """The schedule's id; required on create, on replace absent or the path's."""
    input: JSON
    """The task's input: any JSON value, at most 256 KiB."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    missed_runs: MissedRuns
    overlap: Overlap
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    queue: str
    timezone: str
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom


class _StatsRequired(TypedDict):
    at: str
    counts: Counts
    paused: bool
    queue: str
    recent: RecentCounts


class Stats(_StatsRequired, total=False):
    """The Stats object of the API."""

    burst: int
    """How many tasks may start at once after a quiet spell, with max_per_second; absent: one second's worth (max_per_second rounded up), at least 1."""
    max_per_second: float
    """The most tasks of the queue started a second, by every claim and push delivery together (fractions allowed: 0.5 is one every 2 seconds); a claim held back answers 204 with Retry-After and S3q-Retry-After-Ms; absent: no limit."""
    oldest_pending_age_seconds: int
    """How long it has waited since."""
    oldest_pending_at: str
    """When the oldest due pending task became available."""
    paused_at: str


class StatsReply(TypedDict):
    """The StatsReply object of the API."""

    stats: Stats


class _SubmitRequestRequired(TypedDict):
    task_type: str


class SubmitRequest(_SubmitRequestRequired, total=False):
    """The SubmitRequest object of the API."""

    dedup_key: str
    """At most one live (pending or running) task of the queue holds a dedup key."""
    delay: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    expires_at: str
    id: str
    """A lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits). Defaults to one the server makes."""
    input: JSON
    """The task's input: any JSON value, at most 256 KiB."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    on_parent_expired: Literal["run", "cancel"]
    """What happens to this task when its parent expires: run (the default) or cancel."""
    parent_id: str
    """The parent task: when it expires, this task is expired (pending) or asked to cancel (running, with on_parent_expired cancel)."""
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    queue: str
    """The path's queue, or left out."""
    schedule_at: str
    timeout: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    traceparent: str
    """A W3C traceparent (00-{trace id}-{parent id}-{flags}), kept on the task and handed to its handler; a submit's traceparent header gives it too."""
    tracestate: str
    """A W3C tracestate, with traceparent; a submit's tracestate header gives it too."""
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom
    ttl_seconds: int
    """The time to live in seconds (ttl as a number)."""
    wait: Union[str, float]
    """A duration or a number of seconds: wait up to this long for the outcome: 200 finished, 202 still going, 504 deadline passed. Only POST /queues/{queue}/tasks/wait waits; the plain route refuses a wait over 0 (400 naming wait)."""


class _TaskRequired(TypedDict):
    attempt: int
    """Attempts started (claims)."""
    available_at: str
    created_at: str
    expires_at: Optional[str]
    """The task's deadline; null when it has none."""
    id: str
    """A task id: a lowercase UUIDv7."""
    max_attempts: int
    """Attempts before the task is dead-lettered (status failed); 0 means the default (3)."""
    queue: str
    status: Status
    task_type: str
    timeout: str
    """A duration such as 90s, 30m, 1h or 7d."""
    updated_at: str


class Task(_TaskRequired, total=False):
    """The Task object of the API."""

    artifact_names: List[str]
    """The artifacts uploaded for the task."""
    artifacts_expire_at: str
    cancel_requested: bool
    """A cancel was asked while the task ran: its worker should stop and acknowledge (cancel-ack)."""
    cancelled_at: str
    completed_at: str
    dead_letter_event_sent_at: str
    dedup_key: str
    """At most one live (pending or running) task of the queue holds a dedup key."""
    ended_by: Literal["complete", "fail", "reschedule", "cancel"]
    """The lease operation that ended the last lease (the token is kept so that a replay of it answers the same)."""
    expired_at: str
    expires_in_seconds: int
    """Whole seconds to expires_at, rounded down; negative once passed."""
    expiry_event_sent_at: str
    expiry_reason: Literal["ttl", "parent_expired", "manual"]
    """Why the task expired."""
    failed_at: str
    heartbeats: int
    """Heartbeats of the current attempt, at most 1000."""
    input: JSON
    """The task's input: any JSON value, at most 256 KiB."""
    last_error: str
    lease_expires_at: str
    on_parent_expired: Literal["run", "cancel"]
    """What happens to this task when its parent expires: run (the default) or cancel."""
    output: JSON
    """The task's output: any JSON value."""
    parent_id: str
    """The parent task: when it expires, this task is expired (pending) or asked to cancel (running, with on_parent_expired cancel)."""
    priority: int
    """1 (highest) to 5 (lowest): among due tasks a claim takes the highest first; 0 or absent: the queue's default, else 3."""
    purged_at: str
    """The task was purged then (only in the last version of a purged task's history)."""
    started_at: str
    traceparent: str
    """A W3C traceparent (00-{trace id}-{parent id}-{flags}), kept on the task and handed to its handler; a submit's traceparent header gives it too."""
    tracestate: str
    """A W3C tracestate, with traceparent; a submit's tracestate header gives it too."""
    ttl: str
    """A duration such as 90s, 30m, 1h or 7d."""
    ttl_from: TTLFrom
    worker_id: str


class _TaskListRequired(TypedDict):
    tasks: List[Task]


class TaskList(_TaskListRequired, total=False):
    """The TaskList object of the API."""

    next_cursor: str
    """The cursor of the next page; absent on the last."""


class _TaskReplyRequired(TypedDict):
    task: Task


class TaskReply(_TaskReplyRequired, total=False):
    """The TaskReply object of the API."""

    deduplicated: bool
    """True when a live task already held the dedup key: this is that task (200)."""
    replayed: bool
    """True when the task with the request's id already existed, made by this same request: this is that task (200)."""


class TaskVersion(TypedDict):
    """The TaskVersion object of the API."""

    modified_at: str
    task: Task
    version_id: str


# The types inside each schema, by Schema_field (_item: of an array's items).
ArtifactReply_artifact = Artifact
BatchReply_results_item = BatchResult
BatchRequest_tasks_item = BatchTask
BatchResult_error = JSON
BatchResult_task = Task
BatchTask_ttl_from = TTLFrom
BulkReply_op = BulkOp
BulkReply_skipped_item = BulkSkip
BulkReply_status = Status
BulkRequest_status = Status
ClaimReply_tasks_item = Claimed
Claimed_lease = Lease
Claimed_task = Task
FireReply_fire = Fire
History_versions_item = TaskVersion
PushDelivery_lease = Lease
PushDelivery_task = Task
Queue_counts = Counts
Queue_target = Target
Queue_ttl_from = TTLFrom
QueueList_queues_item = Queue
QueueReply_queue = Queue
QueueRequest_target = Target
QueueRequest_ttl_from = TTLFrom
Schedule_missed_runs = MissedRuns
Schedule_overlap = Overlap
Schedule_ttl_from = TTLFrom
ScheduleHistory_fires_item = Fire
ScheduleList_schedules_item = Schedule
ScheduleReply_schedule = Schedule
ScheduleRequest_missed_runs = MissedRuns
ScheduleRequest_overlap = Overlap
ScheduleRequest_ttl_from = TTLFrom
Stats_counts = Counts
Stats_recent = RecentCounts
StatsReply_stats = Stats
SubmitRequest_ttl_from = TTLFrom
Task_status = Status
Task_ttl_from = TTLFrom
TaskList_tasks_item = Task
TaskReply_task = Task
TaskVersion_task = Task


class Operation(NamedTuple):
    """One operation of the document."""

    operation_id: str
    method: str
    path: str
    tags: Tuple[str, ...]


# Every operation of the document, by path.
OPERATIONS: Tuple[Operation, ...] = (
    Operation('getOpenAPIDocument', 'GET', '/openapi.json', ('meta',)),
    Operation('listQueues', 'GET', '/queues', ('queues',)),
    Operation('getQueue', 'GET', '/queues/{queue}', ('queues',)),
    Operation('declareQueue', 'PUT', '/queues/{queue}', ('queues',)),
    Operation('deleteQueue', 'DELETE', '/queues/{queue}', ('queues',)),
    Operation('cancelTasks', 'POST', '/queues/{queue}/bulk/cancel', ('queues',)),
    Operation('expireTasks', 'POST', '/queues/{queue}/bulk/expire', ('queues',)),
    Operation('retryTasks', 'POST', '/queues/{queue}/bulk/retry', ('queues',)),
    Operation('claimTask', 'POST', '/queues/{queue}/claim', ('leases',)),
    Operation('claimTaskWithWait', 'POST', '/queues/{queue}/claim/wait', ('leases',)),
    Operation('pauseQueue', 'POST', '/queues/{queue}/pause', ('queues',)),
    Operation('purgeTasks', 'POST', '/queues/{queue}/purge', ('queues',)),
    Operation('resumeQueue', 'POST', '/queues/{queue}/resume', ('queues',)),
    Operation('listSchedules', 'GET', '/queues/{queue}/schedules', ('schedules',)),
    Operation('createSchedule', 'POST', '/queues/{queue}/schedules', ('schedules',)),
    Operation('getSchedule', 'GET', '/queues/{queue}/schedules/{id}', ('schedules',)),
    Operation('replaceSchedule', 'PUT', '/queues/{queue}/schedules/{id}', ('schedules',)),
    Operation('deleteSchedule', 'DELETE', '/queues/{queue}/schedules/{id}', ('schedules',)),
    Operation('getScheduleHistory', 'GET', '/queues/{queue}/schedules/{id}/history', ('schedules',)),
    Operation('pauseSchedule', 'POST', '/queues/{queue}/schedules/{id}/pause', ('schedules',)),
    Operation('resumeSchedule', 'POST', '/queues/{queue}/schedules/{id}/resume', ('schedules',)),
    Operation('triggerSchedule', 'POST', '/queues/{queue}/schedules/{id}/trigger', ('schedules',)),
    Operation('getQueueStats', 'GET', '/queues/{queue}/stats', ('queues',)),
    Operation('listTasks', 'GET', '/queues/{queue}/tasks', ('tasks',)),
    Operation('submitTask', 'POST', '/queues/{queue}/tasks', ('tasks',)),
    Operation('submitTasks', 'POST', '/queues/{queue}/tasks/batch', ('tasks',)),
    Operation('submitTaskWithWait', 'POST', '/queues/{queue}/tasks/wait', ('tasks',)),
    Operation('getTask', 'GET', '/queues/{queue}/tasks/{id}', ('tasks',)),
    Operation('createArtifactUpload', 'POST', '/queues/{queue}/tasks/{id}/artifacts', ('artifacts',)),
    Operation('getArtifactDownload', 'GET', '/queues/{queue}/tasks/{id}/artifacts/{name}', ('artifacts',)),
    Operation('cancelTask', 'POST', '/queues/{queue}/tasks/{id}/cancel', ('tasks',)),
    Operation('acknowledgeCancel', 'POST', '/queues/{queue}/tasks/{id}/cancel-ack', ('leases',)),
    Operation('completeTask', 'POST', '/queues/{queue}/tasks/{id}/complete', ('leases',)),
    Operation('expireTask', 'POST', '/queues/{queue}/tasks/{id}/expire', ('tasks',)),
    Operation('failTask', 'POST', '/queues/{queue}/tasks/{id}/fail', ('leases',)),
    Operation('heartbeatTask', 'POST', '/queues/{queue}/tasks/{id}/heartbeat', ('leases',)),
    Operation('getTaskHistory', 'GET', '/queues/{queue}/tasks/{id}/history', ('tasks',)),
    Operation('rescheduleTask', 'POST', '/queues/{queue}/tasks/{id}/reschedule', ('leases',)),
    Operation('retryTask', 'POST', '/queues/{queue}/tasks/{id}/retry', ('tasks',)),
    Operation('listAllTasks', 'GET', '/tasks', ('tasks',)),
)


# The string patterns the document publishes, by Schema.field.
PATTERNS: Dict[str, str] = {
    'Artifact.name': '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',
    'Artifact.task_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'ArtifactRequest.name': '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$',
    'BatchTask.parent_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'BatchTask.task_type': '^[A-Za-z0-9_.:-]{1,128}$',
    'BulkReply.queue': '^[A-Za-z0-9_-]{1,64}$',
    'BulkSkip.id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Fire.running_task_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Fire.schedule_id': '^[A-Za-z0-9_-]{1,128}$',
    'Fire.task_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Lease.task_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Queue.name': '^[A-Za-z0-9_-]{1,64}$',
    'Schedule.id': '^[A-Za-z0-9_-]{1,128}$',
    'Schedule.last_task_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Schedule.queue': '^[A-Za-z0-9_-]{1,64}$',
    'Schedule.task_type': '^[A-Za-z0-9_.:-]{1,128}$',
    'ScheduleRequest.id': '^[A-Za-z0-9_-]{1,128}$',
    'ScheduleRequest.queue': '^[A-Za-z0-9_-]{1,64}$',
    'ScheduleRequest.task_type': '^[A-Za-z0-9_.:-]{1,128}$',
    'Stats.queue': '^[A-Za-z0-9_-]{1,64}$',
    'SubmitRequest.parent_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'SubmitRequest.task_type': '^[A-Za-z0-9_.:-]{1,128}$',
    'Task.id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Task.parent_id': '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
    'Task.queue': '^[A-Za-z0-9_-]{1,64}$',
    'Task.task_type': '^[A-Za-z0-9_.:-]{1,128}$',
}


DOCUMENT_VERSION = '1'
