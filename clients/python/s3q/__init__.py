"""s3q from Python: a client for the s3q HTTP API, a worker, and push targets.

::

    import s3q
    from datetime import timedelta

    client = s3q.Client("http://127.0.0.1:8080", queue="emails")
    task = client.submit("email.send", {"to": "a@example.com"}, ttl=timedelta(hours=1))["task"]
    print(client.status(task["id"])["status"])
"""

from . import models, push
from ._ids import new_id
from ._task import Permanent, Reschedule, TaskContext
from .client import DEFAULT_QUEUE, Client
from .errors import (
    APIError,
    ArgumentError,
    BadRequestError,
    ConflictError,
    DeadlineExceededError,
    LeaseError,
    NotFoundError,
    QueueNotFoundError,
    S3QError,
    SignatureError,
    UnavailableError,
)
from .worker import Worker

__version__ = "0.1.0"

__all__ = [
    "APIError",
    "ArgumentError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "DEFAULT_QUEUE",
    "DeadlineExceededError",
    "LeaseError",
    "NotFoundError",
    "Permanent",
    "QueueNotFoundError",
    "Reschedule",
    "S3QError",
    "SignatureError",
    "TaskContext",
    "UnavailableError",
    "Worker",
    "models",
    "new_id",
    "push",
]
