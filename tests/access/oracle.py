"""An independent reading of the access rules in plain Python, and the callers it is tried on.

The service decides access in SQL (``store/access.py``); this module decides it again
from the rules' sentences, one rule per sentence, so the two can be compared:

- "Tenants never see each other, anywhere."
- "a PRIVATE chat is its creator's; a TEAM chat is its team's"
- "public: true lets the rest of the tenant read it (read only)"
- "its creator (and its team, when TEAM) may also append, update and delete"
- "agent reads, appends to and streams into every chat of its tenant (the producer
  mutations need agent or admin)"; "admin may do everything within its tenant"
- "A chat the caller may not read behaves exactly as if it did not exist."
- stopping a stream needs the right to write to the chat (creator, its team for TEAM
  chats, agent, admin): a read-only viewer is FORBIDDEN.
- chatFor: the chat of (tenant, assistant, channel, person), the person being the
  caller or, for agent and admin only, the person they name.
- share links: sharing and revoking take the right to change the chat; a TENANT link
  opens the shared branch to every identity of the chat's tenant (whatever else it may
  read) and to no one outside it. A link is the only thing that opens a chat to someone
  the rules above keep out.
- feedback: whoever may read a message may rate it; a chat's feedback is listed to
  whoever may change the chat (its creator, its team when TEAM) and to the tenant's
  admin, and is absent for everyone else.
- interrupts: "whoever may change the chat (its creator, its team for a team chat, an
  admin of the tenant), or an identity with the approver role that may read it" decides
  them, and finds them in its inbox; "the agent role alone does not".

and of agent memory, which belongs to a (tenant, subject) rather than to a chat:

- "The subject reads and changes its own; role agent or admin may name any subject of
  its tenant. Everyone else: as if absent." A named subject is always one of the
  caller's own tenant; a write naming someone else's without the role is FORBIDDEN.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from enum import Enum

__all__ = [
    "APPROVERS",
    "CALLERS",
    "OWNERS",
    "VISIBILITIES",
    "Caller",
    "ChatSpec",
    "Outcome",
    "may_append",
    "may_change",
    "may_read",
    "may_stream",
    "may_use_memory",
]


class Outcome(Enum):
    """What a caller should see."""

    OK = "ok"
    #: Exactly what a chat that does not exist looks like (null, or NOT_FOUND).
    HIDDEN = "hidden"
    FORBIDDEN = "forbidden"


@dataclass(frozen=True)
class Caller:
    tenant: str
    team: str | None
    user: str
    roles: tuple[str, ...] = ()

    def headers(self) -> dict[str, str]:
        headers = {"X-Tenant-Id": self.tenant, "X-User-Id": self.user}
        if self.team is not None:
            headers["X-Team-Id"] = self.team
        if self.roles:
            headers["X-Roles"] = ",".join(self.roles)
        return headers

    def label(self) -> str:
        return f"{self.tenant}/{self.team or '-'}/{self.user}/{'+'.join(self.roles) or 'user'}"


@dataclass(frozen=True)
class ChatSpec:
    owner: Caller
    share: str  # PRIVATE or TEAM
    public: bool

    def label(self) -> str:
        return f"{self.share}{'+public' if self.public else ''} of {self.owner.label()}"


# Every combination of these dimensions is a caller: same or other tenant, same, other
# or no team, same or other user id, and each role; and the approvers below.
TENANTS = ("t1", "t2")
TEAMS = ("red", "blue", None)
USERS = ("u1", "u2")
ROLES: tuple[tuple[str, ...], ...] = ((), ("agent",), ("admin",))

# The ``approver`` role changes one thing only: who decides interrupts (an approver
# decides those of every chat it may read). So rather than a whole fourth role in the
# product, two approvers, each in a situation where the role alone would make the
# difference: in the owners' tenant, neither the owners' user nor their team (it reads
# only the public chats, and decides exactly those, by the role alone); and in the
# other tenant with the owners' user id and team (it reads, and so decides, nothing).
APPROVERS: tuple[Caller, ...] = (
    Caller("t1", "blue", "u2", ("approver",)),
    Caller("t2", "red", "u1", ("approver",)),
)

CALLERS: tuple[Caller, ...] = tuple(
    Caller(tenant, team, user, roles)
    for tenant, team, user, roles in itertools.product(TENANTS, TEAMS, USERS, ROLES)
) + APPROVERS

# Owners are callers too. Roles never change what a creator owns, and the tenants,
# user ids and named teams are symmetric, so one owner per distinct situation is
# enough: a creator in a team, and a creator in none (whose TEAM chat has no team).
OWNERS: tuple[Caller, ...] = tuple(
    caller for caller in CALLERS
    if caller.tenant == "t1" and caller.user == "u1" and not caller.roles
    and caller.team in ("red", None)
)

VISIBILITIES: tuple[tuple[str, bool], ...] = tuple(
    itertools.product(("PRIVATE", "TEAM"), (False, True))
)


def _same_tenant(caller: Caller, chat: ChatSpec) -> bool:
    return caller.tenant == chat.owner.tenant


def _owns(caller: Caller, chat: ChatSpec) -> bool:
    """Creator, or a member of the chat's team when it is shared with the team."""
    if caller.user == chat.owner.user:
        return True
    return chat.share == "TEAM" and caller.team is not None and caller.team == chat.owner.team


def may_read(caller: Caller, chat: ChatSpec) -> bool:
    if not _same_tenant(caller, chat):
        return False
    if "admin" in caller.roles or "agent" in caller.roles:
        return True
    return _owns(caller, chat) or chat.public


def may_change(caller: Caller, chat: ChatSpec) -> bool:
    """Update, delete, restore, purge, edit and delete messages."""
    if not _same_tenant(caller, chat):
        return False
    return "admin" in caller.roles or _owns(caller, chat)


def may_append(caller: Caller, chat: ChatSpec) -> bool:
    return may_change(caller, chat) or (_same_tenant(caller, chat) and "agent" in caller.roles)


def may_stream(caller: Caller, chat: ChatSpec) -> bool:
    """The producer mutations: agent or admin, in the chat's tenant."""
    return _same_tenant(caller, chat) and bool({"agent", "admin"} & set(caller.roles))


def read_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    return Outcome.OK if may_read(caller, chat) else Outcome.HIDDEN


def change_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    if not may_read(caller, chat):
        return Outcome.HIDDEN
    return Outcome.OK if may_change(caller, chat) else Outcome.FORBIDDEN


def append_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    if not may_read(caller, chat):
        return Outcome.HIDDEN
    return Outcome.OK if may_append(caller, chat) else Outcome.FORBIDDEN


def stream_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """The producer mutations (start/push/record/end a stream)."""
    if not may_read(caller, chat):
        return Outcome.HIDDEN
    return Outcome.OK if may_stream(caller, chat) else Outcome.FORBIDDEN


def deleted_change_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """A soft-deleted chat is hidden everywhere; only those who may change it see it."""
    return Outcome.OK if may_change(caller, chat) else Outcome.HIDDEN


def create_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """Anyone may create a chat; it belongs to the caller, whoever else exists."""
    return Outcome.OK


def may_use_memory(caller: Caller, subject: Caller) -> bool:
    """Read and change the memory of ``subject`` (a user of some tenant)."""
    if caller.tenant != subject.tenant:
        return False
    return caller.user == subject.user or bool({"agent", "admin"} & set(caller.roles))


def memory_read_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """Reading the memory of the chat's owner, naming them as ``subject``."""
    return Outcome.OK if may_use_memory(caller, chat.owner) else Outcome.HIDDEN


def memory_own_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """Reading without naming a subject: the caller's own memory, nobody else's."""
    same_person = caller.tenant == chat.owner.tenant and caller.user == chat.owner.user
    return Outcome.OK if same_person else Outcome.HIDDEN


def memory_write_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """Writing naming the owner's user id: it lands in the caller's own tenant."""
    own = caller.user == chat.owner.user
    return Outcome.OK if own or {"agent", "admin"} & set(caller.roles) else Outcome.FORBIDDEN
def stop_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """``stopStream``: whoever may write to the chat (appenders: agents included)."""
    return append_outcome(caller, chat)


def shared_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """Reading (or forking) a TENANT share link the chat's owner made."""
    return Outcome.OK if _same_tenant(caller, chat) else Outcome.HIDDEN


def chat_for_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """``chatFor`` naming the chat's owner as the person: the owner themself, or an agent
    or admin on their behalf; anyone else naming another person is refused. (Callers of
    another tenant get a chat of their own tenant, never this one.)"""
    if caller.user == chat.owner.user or {"agent", "admin"} & set(caller.roles):
        return Outcome.OK
    return Outcome.FORBIDDEN


def feedback_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """The feedback listing: a chat's feedback is there for whoever may change the chat
    and for the tenant's admin; for anyone else it is absent (a reader's rating shows
    to the owner, never to another reader)."""
    return Outcome.OK if may_change(caller, chat) else Outcome.HIDDEN


def decide_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """``resolveInterrupt`` on an interrupt of the chat: whoever may change it, or an
    ``approver`` that may read it; a reader without either is refused."""
    if not may_read(caller, chat):
        return Outcome.HIDDEN
    if may_change(caller, chat) or "approver" in caller.roles:
        return Outcome.OK
    return Outcome.FORBIDDEN


def inbox_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """The interrupts inbox: the chat's pending interrupt is listed to whoever may decide
    it, and absent for everyone else (a reader who may not decide does not see it)."""
    return Outcome.OK if decide_outcome(caller, chat) is Outcome.OK else Outcome.HIDDEN


def uploader_outcome(caller: Caller, chat: ChatSpec) -> Outcome:
    """``completeUpload`` of an upload the chat's owner started: theirs alone."""
    same_person = caller.tenant == chat.owner.tenant and caller.user == chat.owner.user
    return Outcome.OK if same_person else Outcome.HIDDEN
