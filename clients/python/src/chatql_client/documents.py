"""Every GraphQL document the kit sends, in one place.

The client, the stream writer, the agent loop and the OpenAI Agents session import their
documents from here; no other kit module spells one. Each upper-case constant that does
not end in ``_FIELDS`` is a whole document (an operation), and the test suite parses and
validates every one of them against the service's ``schema.graphql``; the ``_FIELDS``
constants are the selection sets the documents share (``MESSAGE_FIELDS`` is generated
from the schema by ``make kit-types``, in ``leaves.py``).
"""

from __future__ import annotations

from .leaves import MESSAGE_FIELDS

__all__ = [
    "ACTIVE_LEAF",
    "ANSWERS",
    "APPEND_MESSAGES",
    "AWAITED_LEAF",
    "CHAT",
    "CHATS",
    "CHAT_EVENTS",
    "CHAT_FIELDS",
    "CHAT_FOR",
    "CHAT_INTERRUPTS",
    "CREATE_CHAT",
    "CUT_OFF",
    "DELETE_MEMORY",
    "END_STREAM",
    "FILE_LIMITS",
    "INTERRUPT",
    "MEMORY_FIELDS",
    "MESSAGES",
    "MESSAGE_FIELDS",
    "MODEL_CONTEXT",
    "PUSH_CHUNKS",
    "RECENT_MEMORY",
    "RECORD_STEP",
    "REGENERATE",
    "RESUMPTION",
    "RUN_STATES",
    "SEARCH_MEMORY",
    "SEARCH_MESSAGES",
    "SESSION_DELETE_MESSAGES",
    "SESSION_PAGE",
    "SESSION_START_OVER",
    "SETTLE_RUN_STATE",
    "SET_CHAT_TITLE",
    "START_STREAM",
    "STOP_STREAM",
    "UPDATE_MEMORY",
    "WRITE_MEMORY",
]

# ---- shared selection sets -----------------------------------------------------------

# MESSAGE_FIELDS (leaves.py) is generated from schema.graphql: every scalar and enum
# field of Message.
CHAT_FIELDS = ("id title titleSource assistantId mode status channel lastMessageAt activeLeafId "
               "metadata createdAt createdBy")
MEMORY_FIELDS = "id scope content pinned subject createdAt updatedAt"

# ---- chats (ChatqlClient) ------------------------------------------------------------

CREATE_CHAT = (f"mutation($input: CreateChatInput!) {{ createChat(input: $input) "
               f"{{ {CHAT_FIELDS} }} }}")
CHAT = f"query($id: ID!) {{ chat(id: $id) {{ {CHAT_FIELDS} }} }}"
CHAT_FOR = (f"mutation($a: String!, $c: String!, $s: String) {{ chatFor(assistantId: $a, "
            f"channel: $c, subject: $s) {{ {CHAT_FIELDS} }} }}")
CHATS = (f"query($f: ChatFilter, $first: Int, $after: String) {{ chats(filter: $f, "
         f"first: $first, after: $after) {{ edges {{ node {{ {CHAT_FIELDS} }} }} "
         f"pageInfo {{ hasNextPage endCursor }} }} }}")
REGENERATE = f"mutation($id: ID!) {{ regenerate(messageId: $id) {{ {CHAT_FIELDS} }} }}"

# ---- messages (ChatqlClient) ---------------------------------------------------------

APPEND_MESSAGES = (
    "mutation($c: ID!, $a: String!, $m: [MessageInput!]!, $p: ID) { appendMessages("
    "chatId: $c, appendId: $a, messages: $m, parentId: $p) { chatId appendId "
    "messageIds firstSequence lastSequence } }")
MESSAGES = (f"query($c: ID!, $last: Int, $b: ID, $all: Boolean!) {{ messages(chatId: $c, "
            f"last: $last, branch: $b, allBranches: $all) {{ edges {{ node "
            f"{{ {MESSAGE_FIELDS} }} }} }} }}")
MODEL_CONTEXT = (
    f"query($c: ID!, $l: Int, $t: Int, $th: Boolean, $ms: [String!], $f: FileMode!) {{ "
    f"modelContext(chatId: $c, limit: $l, maxTokens: $t, includeThinking: $th, "
    f"memoryScopes: $ms, files: $f) {{ {MESSAGE_FIELDS} }} }}")
SEARCH_MESSAGES = (
    f"query($q: String!, $f: Int, $c: ID, $a: String, $w: Int) {{ searchMessages("
    f"query: $q, first: $f, chatId: $c, assistantId: $a, window: $w) {{ score "
    f"message {{ {MESSAGE_FIELDS} }} chat {{ {CHAT_FIELDS} }} "
    f"window {{ {MESSAGE_FIELDS} }} }} }}")

# ---- files (ChatqlClient) ------------------------------------------------------------

FILE_LIMITS = "query { fileLimits { maxBytes mediaTypes quotaBytes usedBytes } }"

# ---- memory (ChatqlClient) -----------------------------------------------------------

WRITE_MEMORY = (f"mutation($i: WriteMemoryInput!) {{ writeMemory(input: $i) "
                f"{{ {MEMORY_FIELDS} }} }}")
RECENT_MEMORY = (f"query($s: [String!]!, $l: Int, $sub: String) {{ recentMemory(scopes: $s, "
                 f"limit: $l, subject: $sub) {{ {MEMORY_FIELDS} }} }}")
SEARCH_MEMORY = (f"query($q: String!, $s: [String!]!, $f: Int, $sub: String) {{ searchMemory("
                 f"query: $q, scopes: $s, first: $f, subject: $sub) {{ score entry "
                 f"{{ {MEMORY_FIELDS} }} }} }}")
UPDATE_MEMORY = (f"mutation($id: ID!, $i: UpdateMemoryInput!) {{ updateMemory(id: $id, "
                 f"input: $i) {{ {MEMORY_FIELDS} }} }}")
DELETE_MEMORY = "mutation($id: ID!) { deleteMemory(id: $id) }"

# ---- streams (ChatqlClient, StreamWriter) --------------------------------------------

STOP_STREAM = "mutation($c: ID!) { stopStream(chatId: $c) }"
START_STREAM = ("mutation($i: StartStreamInput!) { startStream(input: $i) "
                "{ id chatId requestId status idleTimeout } }")
#: Also the heartbeat (no chunks).
PUSH_CHUNKS = ("mutation($id: ID!, $chunks: [ChunkInput!]!) { pushChunks(streamId: $id, "
               "chunks: $chunks) { accepted duplicates lastSeq } }")
RECORD_STEP = ("mutation($id: ID!, $step: StepInput!) { recordStep(streamId: $id, "
               "step: $step) }")
#: The agent names the chat (a person's title stays).
SET_CHAT_TITLE = ("mutation($c: ID!, $t: String!) { setChatTitle(chatId: $c, title: $t) "
                  "{ id title titleSource } }")
END_STREAM = (
    "mutation($id: ID!, $status: StreamStatus!, $error: String, $usage: UsageInput) "
    "{ endStream(streamId: $id, status: $status, error: $error, usage: $usage) "
    "{ stream { id chatId requestId status } messages { id role type props blockId "
    "threadId status parentId sequence } } }")

# ---- the agent loop (AgentLoop) ------------------------------------------------------

#: Followed over the WebSocket (graphql-transport-ws): by the agent loop, and by an
#: inline ask while it waits for a person's decision.
CHAT_EVENTS = "subscription($f: ChatFilter) { chatEvents(filter: $f) { type chatId } }"
#: The chat's assistant, active leaf and newest message: the question it awaits, if any.
AWAITED_LEAF = ("query($id: ID!) { chat(id: $id) { id assistantId activeLeafId "
                "messages(last: 1) { edges { node { id role sequence status } } } } }")
ACTIVE_LEAF = "query($id: ID!) { chat(id: $id) { activeLeafId } }"
#: Decisions of a person that wait for a worker to resume the chat's run.
RESUMPTION = ("query($id: ID!) { chat(id: $id) { id assistantId resumption { requestId "
              "decisions { id kind state toolCallId toolName arguments prompt "
              "decision { approved editedArguments response reason decidedBy } } } } }")
#: The active branch's newest messages and the chat's resume records: whether the reply
#: to the newest question was cut off by a worker that vanished.
CUT_OFF = ("query($id: ID!) { chat(id: $id) { id assistantId activeLeafId "
           "messages(last: 100) { edges { node { id role status requestId } } } } "
           "resumeRecords(chatId: $id) { requestId status error } }")
#: The fields of an interrupt a producer reads (the same as a resumption's decisions).
INTERRUPT_FIELDS = ("id kind state streamId toolCallId toolName arguments prompt expiresAt "
                    "decision { approved editedArguments response reason decidedBy }")
#: A chat's interrupts: where an inline ask finds the one it made (and the chat's
#: assistant, whose chats' events it follows while it waits).
CHAT_INTERRUPTS = ("query($id: ID!) { chat(id: $id) { assistantId interrupts { "
                   + INTERRUPT_FIELDS + " } } }")
#: One interrupt, as an inline ask waits for its decision.
INTERRUPT = "query($id: ID!) { interrupt(id: $id) { " + INTERRUPT_FIELDS + " } }"
#: The messages of every branch, newest first page by page: a question's answers.
ANSWERS = ("query($c: ID!, $before: String) { messages(chatId: $c, allBranches: true, "
           "last: 100, before: $before) { edges { node { parentId sequence } } "
           "pageInfo { hasPreviousPage startCursor } } }")

# ---- the OpenAI Agents SDK session (ChatqlSession) -----------------------------------

SESSION_PAGE = (
    "query($c: ID!, $last: Int, $before: String) { messages(chatId: $c, last: $last, "
    "before: $before) { edges { node { id role type props metadata status } } "
    "pageInfo { hasPreviousPage startCursor } } }")
SESSION_DELETE_MESSAGES = ("mutation($c: ID!, $ids: [ID!]!) { deleteMessages(chatId: $c, "
                           "ids: $ids) }")
SESSION_START_OVER = "mutation($c: ID!) { startOver(chatId: $c) { id } }"
#: The chat's resume records: where a paused run's ``RunState`` is kept.
RUN_STATES = ("query($c: ID!) { resumeRecords(chatId: $c) { id requestId type status "
              "input spaceSnapshot } }")
#: A resumed run marks the record it continued from as done.
SETTLE_RUN_STATE = ("mutation($id: ID!, $status: String) { updateResume(id: $id, "
                    "status: $status) { id status } }")
