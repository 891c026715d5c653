"""SQLModel tables and the database handle. No business rules live here."""

from models.activity import Activity, ArchivedChain, HistoryCheckpoint
from models.db import Database, normalize_url
from models.delivery import DigestSchedule, NotificationDelivery, Reminder
from models.deputy import Deputyship
from models.identity import ApiToken, Group, GroupMember, LoginAttempt, User
from models.ids import kind_of, new_id
from models.job import Job
from models.notification import Notification, NotificationSubscription
from models.oidc import UserIdentity
from models.resources import (
    Document,
    Permission,
    Project,
    ProjectedBudget,
    Subproject,
    WorkflowItem,
)
from models.task import TaskAssignment, TaskCount
from models.types import as_utc, utcnow
from models.unit_of_work import UnitOfWork, unit_of_work
from models.visit import StateVisit
from models.workflow import Case, CaseRoleParty, CaseState, EnabledAction, Idempotency, Workflow

__all__ = [
    "Activity",
    "ApiToken",
    "ArchivedChain",
    "Case",
    "CaseRoleParty",
    "CaseState",
    "Database",
    "Deputyship",
    "DigestSchedule",
    "Document",
    "EnabledAction",
    "Group",
    "GroupMember",
    "HistoryCheckpoint",
    "Idempotency",
    "Job",
    "LoginAttempt",
    "Notification",
    "NotificationDelivery",
    "NotificationSubscription",
    "Permission",
    "Project",
    "ProjectedBudget",
    "Reminder",
    "StateVisit",
    "Subproject",
    "TaskAssignment",
    "TaskCount",
    "UnitOfWork",
    "User",
    "UserIdentity",
    "Workflow",
    "WorkflowItem",
    "as_utc",
    "kind_of",
    "new_id",
    "normalize_url",
    "unit_of_work",
    "utcnow",
]
