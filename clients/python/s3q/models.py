"""The API's JSON, typed: generated from shared/api/openapi.json.

Do not edit: run ``python3 scripts/genmodels.py`` (``make test`` checks that
this file matches the document).
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, NamedTuple, Optional, Tuple, TypedDict, Union

JSON = Any
"""Any JSON value."""


OpenAPI = Dict[str, JSON]  # an OpenAPI 3.1 document
Status = Literal["pending", "running", "completed", "failed", "cancelled", "expired", "archived"]
TTLFrom = Literal["submission", "first_attempt"]


class _ArtifactRequired(TypedDict):
    expires_at: str
    name: str
    task_id: str


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


class BatchReplyResultsItem(TypedDict, total=False):
    """The BatchReplyResultsItem object of the API."""

    deduplicated: bool
    error: Error
    replayed: bool
    task: Task


class BatchReply(TypedDict):
    """The BatchReply object of the API."""

    results: List[BatchReplyResultsItem]


class BatchRequest(TypedDict):
    """The BatchRequest object of the API."""

    tasks: List[JSON]


class BulkReplySkippedItem(TypedDict):
    """The BulkReplySkippedItem object of the API."""

    id: str
    reason: str


class _BulkReplyRequired(TypedDict):
    changed: int
    """Tasks changed (on a dry run: that would be)."""
    dry_run: bool
    matched: int
    """Tasks the filter chose in this call."""
    op: Literal["purge", "retry", "cancel", "expire"]
    queue: str
    status: Status
    task_ids: List[str]


class BulkReply(_BulkReplyRequired, total=False):
    """The BulkReply object of the API."""

    next_cursor: str
    """Continue with it; absent once every task of the status was examined."""
    skipped: List[BulkReplySkippedItem]


class BulkRequest(TypedDict, total=False):
    """The BulkRequest object of the API."""

    cursor: str
    """The next_cursor of the previous call."""
    dry_run: bool
    """Report what would change, write nothing."""
    limit: int
    """Most tasks changed by this call (default 100)."""
    older_than: Union[str, float]
    """Only tasks last changed (updated_at) at least this long ago: a duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    status: Status
    task_type: str
    """Only tasks of this type."""


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
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    max_tasks: int
    queue: str
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
    """Any JSON value."""


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
    """A count stopped at 10 LIST pages: there are at least this many."""
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
    code: str
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
    retryable: bool


class _FireRequired(TypedDict):
    fire_time: str
    fired_at: str
    schedule_id: str


class Fire(_FireRequired, total=False):
    """The Fire object of the API."""

    error: str
    running_task_id: str
    skipped: str
    task_id: str


class FireReply(TypedDict):
    """The FireReply object of the API."""

    fire: Fire


class _HeartbeatRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class HeartbeatRequest(_HeartbeatRequestRequired, total=False):
    """The HeartbeatRequest object of the API."""

    lease_for: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""


class HistoryVersionsItem(TypedDict):
    """The HistoryVersionsItem object of the API."""

    modified_at: str
    task: Task
    version_id: str


class _HistoryRequired(TypedDict):
    versions: List[HistoryVersionsItem]


class History(_HistoryRequired, total=False):
    """The History object of the API."""

    next_cursor: str


class Lease(TypedDict):
    """The Lease object of the API."""

    expires_at: str
    task_id: str
    token: str


class _QueueRequired(TypedDict):
    created_at: str
    name: str
    updated_at: str


class Queue(_QueueRequired, total=False):
    """The Queue object of the API."""

    auto_declared: bool
    counts: Counts
    max_attempts: int
    max_concurrency: int
    paused: bool
    """Claims and push deliveries take nothing from a paused queue; submits go on."""
    paused_at: str
    shards: int
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


class QueueReply(TypedDict):
    """The QueueReply object of the API."""

    queue: Queue


class QueueRequest(TypedDict, total=False):
    """The QueueRequest object of the API."""

    max_attempts: int
    max_concurrency: int
    shards: int
    target: Target
    timeout: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom


class _RescheduleRequestRequired(TypedDict):
    lease_token: str
    """The token of the lease, from the claim."""


class RescheduleRequest(_RescheduleRequestRequired, total=False):
    """The RescheduleRequest object of the API."""

    delay: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    extend_expiration: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""


class _ScheduleRequired(TypedDict):
    cron: str
    id: str
    task_type: str


class Schedule(_ScheduleRequired, total=False):
    """The Schedule object of the API."""

    last_run_at: Optional[str]
    next_run_at: Optional[str]
    next_runs: List[str]
    queue: str


class _ScheduleHistoryRequired(TypedDict):
    fires: List[Fire]


class ScheduleHistory(_ScheduleHistoryRequired, total=False):
    """The ScheduleHistory object of the API."""

    next_cursor: str


class _ScheduleListRequired(TypedDict):
    schedules: List[Schedule]


class ScheduleList(_ScheduleListRequired, total=False):
    """The ScheduleList object of the API."""

    next_cursor: str


class ScheduleReply(TypedDict):
    """The ScheduleReply object of the API."""

    schedule: Schedule


class _ScheduleRequestRequired(TypedDict):
    cron: str
    task_type: str


class ScheduleRequest(_ScheduleRequestRequired, total=False):
    """The ScheduleRequest object of the API."""

    id: str
    input: JSON
    """Any JSON value."""
    max_attempts: int
    queue: str
    timezone: str
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom


class StatsReplyStatsRecent(TypedDict):
    """The StatsReplyStatsRecent object of the API."""

    cancelled: int
    expired: int
    failed: int
    window_seconds: int


class _StatsReplyStatsRequired(TypedDict):
    at: str
    counts: Counts
    paused: bool
    queue: str
    recent: StatsReplyStatsRecent


class StatsReplyStats(_StatsReplyStatsRequired, total=False):
    """The StatsReplyStats object of the API."""

    oldest_pending_age_seconds: int
    """How long it has waited since."""
    oldest_pending_at: str
    """When the oldest due pending task became available."""
    paused_at: str


class StatsReply(TypedDict):
    """The StatsReply object of the API."""

    stats: StatsReplyStats


class _SubmitRequestRequired(TypedDict):
    task_type: str


class SubmitRequest(_SubmitRequestRequired, total=False):
    """The SubmitRequest object of the API."""

    dedup_key: str
    delay: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    expires_at: str
    id: str
    """A lowercase UUIDv7 the caller makes: one id is one task (exactly-once submits)."""
    input: JSON
    """Any JSON value."""
    max_attempts: int
    on_parent_expired: str
    parent_id: str
    queue: str
    schedule_at: str
    timeout: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl: Union[str, float]
    """A duration such as 90s, 30m, 1h or 7d, or a number of seconds."""
    ttl_from: TTLFrom
    ttl_seconds: int
    wait: Union[str, float]
    """A duration or a number of seconds: wait up to this long for the outcome: 200 finished, 202 still going, 504 deadline passed. Only POST /queues/{queue}/tasks/wait waits; the plain route refuses a wait over 0 (400 naming wait)."""


Target = TypedDict(
    'Target',
    {
        'lambda': 'str',
        'secret': 'str',
        'url': 'str',
    },
    total=False,
)


class _TaskRequired(TypedDict):
    attempt: int
    available_at: str
    created_at: str
    expires_at: Optional[str]
    id: str
    max_attempts: int
    queue: str
    status: Status
    task_type: str
    timeout: str
    """A duration such as 90s, 30m, 1h or 7d."""
    updated_at: str


class Task(_TaskRequired, total=False):
    """The Task object of the API."""

    artifact_names: List[str]
    artifacts_expire_at: str
    cancel_requested: bool
    cancelled_at: str
    completed_at: str
    dead_letter_event_sent_at: str
    dedup_key: str
    ended_by: str
    """The lease operation that ended the last lease (complete, fail, reschedule, cancel)."""
    expired_at: str
    expires_in_seconds: int
    """Whole seconds to expires_at, rounded down; negative once passed."""
    expiry_event_sent_at: str
    expiry_reason: Literal["ttl", "parent_expired", "manual"]
    failed_at: str
    heartbeats: int
    """Heartbeats of the current attempt, at most 1000."""
    input: JSON
    """Any JSON value."""
    last_error: str
    lease_expires_at: str
    on_parent_expired: str
    output: JSON
    """Any JSON value."""
    parent_id: str
    purged_at: str
    """The task was purged then (only in the last version of a purged task's history)."""
    started_at: str
    ttl: str
    """A duration such as 90s, 30m, 1h or 7d."""
    ttl_from: TTLFrom
    worker_id: str


class _TaskListRequired(TypedDict):
    tasks: List[Task]


class TaskList(_TaskListRequired, total=False):
    """The TaskList object of the API."""

    next_cursor: str


class _TaskReplyRequired(TypedDict):
    task: Task


class TaskReply(_TaskReplyRequired, total=False):
    """The TaskReply object of the API."""

    deduplicated: bool
    replayed: bool


# The types inside each schema, by Schema_field (_item: of an array's items).
ArtifactReply_artifact = Artifact
BatchReply_results_item = BatchReplyResultsItem
BulkReply_skipped_item = BulkReplySkippedItem
BulkReply_status = Status
BulkRequest_status = Status
ClaimReply_tasks_item = Claimed
Claimed_lease = Lease
Claimed_task = Task
FireReply_fire = Fire
History_versions_item = HistoryVersionsItem
Queue_counts = Counts
Queue_target = Target
Queue_ttl_from = TTLFrom
QueueList_queues_item = Queue
QueueReply_queue = Queue
QueueRequest_target = Target
QueueRequest_ttl_from = TTLFrom
ScheduleHistory_fires_item = Fire
ScheduleList_schedules_item = Schedule
ScheduleReply_schedule = Schedule
ScheduleRequest_ttl_from = TTLFrom
StatsReply_stats = StatsReplyStats
SubmitRequest_ttl_from = TTLFrom
Task_status = Status
Task_ttl_from = TTLFrom
TaskList_tasks_item = Task
TaskReply_task = Task


class Operation(NamedTuple):
    """One operation of the document."""

    operation_id: str
    method: str
    path: str
    tags: Tuple[str, ...]


# Every operation of the document, by path.
OPERATIONS: Tuple[Operation, ...] = (
    Operation('get_openapi_json', 'GET', '/openapi.json', ()),
    Operation('get_queues', 'GET', '/queues', ()),
    Operation('get_queues_queue', 'GET', '/queues/{queue}', ()),
    Operation('put_queues_queue', 'PUT', '/queues/{queue}', ()),
    Operation('delete_queues_queue', 'DELETE', '/queues/{queue}', ()),
    Operation('post_queues_queue_bulk_cancel', 'POST', '/queues/{queue}/bulk/cancel', ()),
    Operation('post_queues_queue_bulk_expire', 'POST', '/queues/{queue}/bulk/expire', ()),
    Operation('post_queues_queue_bulk_retry', 'POST', '/queues/{queue}/bulk/retry', ()),
    Operation('post_queues_queue_claim', 'POST', '/queues/{queue}/claim', ()),
    Operation('post_queues_queue_claim_wait', 'POST', '/queues/{queue}/claim/wait', ()),
    Operation('post_queues_queue_pause', 'POST', '/queues/{queue}/pause', ()),
    Operation('post_queues_queue_purge', 'POST', '/queues/{queue}/purge', ()),
    Operation('post_queues_queue_resume', 'POST', '/queues/{queue}/resume', ()),
    Operation('get_queues_queue_schedules', 'GET', '/queues/{queue}/schedules', ()),
    Operation('post_queues_queue_schedules', 'POST', '/queues/{queue}/schedules', ()),
    Operation('get_queues_queue_schedules_id', 'GET', '/queues/{queue}/schedules/{id}', ()),
    Operation('put_queues_queue_schedules_id', 'PUT', '/queues/{queue}/schedules/{id}', ()),
    Operation('delete_queues_queue_schedules_id', 'DELETE', '/queues/{queue}/schedules/{id}', ()),
    Operation('get_queues_queue_schedules_id_history', 'GET', '/queues/{queue}/schedules/{id}/history', ()),
    Operation('post_queues_queue_schedules_id_pause', 'POST', '/queues/{queue}/schedules/{id}/pause', ()),
    Operation('post_queues_queue_schedules_id_resume', 'POST', '/queues/{queue}/schedules/{id}/resume', ()),
    Operation('post_queues_queue_schedules_id_trigger', 'POST', '/queues/{queue}/schedules/{id}/trigger', ()),
    Operation('get_queues_queue_stats', 'GET', '/queues/{queue}/stats', ()),
    Operation('get_queues_queue_tasks', 'GET', '/queues/{queue}/tasks', ()),
    Operation('post_queues_queue_tasks', 'POST', '/queues/{queue}/tasks', ()),
    Operation('post_queues_queue_tasks_batch', 'POST', '/queues/{queue}/tasks/batch', ()),
    Operation('post_queues_queue_tasks_wait', 'POST', '/queues/{queue}/tasks/wait', ()),
    Operation('get_queues_queue_tasks_id', 'GET', '/queues/{queue}/tasks/{id}', ()),
    Operation('post_queues_queue_tasks_id_artifacts', 'POST', '/queues/{queue}/tasks/{id}/artifacts', ()),
    Operation('get_queues_queue_tasks_id_artifacts_name', 'GET', '/queues/{queue}/tasks/{id}/artifacts/{name}', ()),
    Operation('post_queues_queue_tasks_id_cancel', 'POST', '/queues/{queue}/tasks/{id}/cancel', ()),
    Operation('post_queues_queue_tasks_id_cancel-ack', 'POST', '/queues/{queue}/tasks/{id}/cancel-ack', ()),
    Operation('post_queues_queue_tasks_id_complete', 'POST', '/queues/{queue}/tasks/{id}/complete', ()),
    Operation('post_queues_queue_tasks_id_expire', 'POST', '/queues/{queue}/tasks/{id}/expire', ()),
    Operation('post_queues_queue_tasks_id_fail', 'POST', '/queues/{queue}/tasks/{id}/fail', ()),
    Operation('post_queues_queue_tasks_id_heartbeat', 'POST', '/queues/{queue}/tasks/{id}/heartbeat', ()),
    Operation('get_queues_queue_tasks_id_history', 'GET', '/queues/{queue}/tasks/{id}/history', ()),
    Operation('post_queues_queue_tasks_id_reschedule', 'POST', '/queues/{queue}/tasks/{id}/reschedule', ()),
    Operation('post_queues_queue_tasks_id_retry', 'POST', '/queues/{queue}/tasks/{id}/retry', ()),
    Operation('get_tasks', 'GET', '/tasks', ()),
)


# The string patterns the document publishes, by Schema.field.
PATTERNS: Dict[str, str] = {
}


DOCUMENT_VERSION = '1'
