"""Engine hooks answered by the client over the wire (`session/beforeCompact`, ...).

Only the hooks the client declared in `initializationOptions.hooks` are asked. An error answer, a
non-object answer or no answer within `hookTimeoutMs` counts as no answer. When we stop waiting
(timeout or the summarization is cancelled) the client is told with `$/cancelRequest`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from compactd.engine.hooks import Hooks

if TYPE_CHECKING:
    from .server import CompactdServer

log = logging.getLogger("compactd.rpc")

WIRE_METHODS = {
    "before_compact": "session/beforeCompact",
    "compacting": "session/compacting",
    "before_tree": "session/beforeTree",
}
DECLARED_NAMES = {"before_compact": "beforeCompact", "compacting": "compacting", "before_tree": "beforeTree"}


class RpcHooks(Hooks):
    def __init__(self, server: CompactdServer, declared: set[str], timeout_ms: int) -> None:
        self.server = server
        self.declared = declared
        self.timeout = timeout_ms / 1000

    async def _ask(self, name: str, event: dict[str, Any]) -> dict[str, Any] | None:
        if DECLARED_NAMES[name] not in self.declared:
            return None
        method = WIRE_METHODS[name]
        protocol = self.server.protocol
        msg_id = f"hook-{uuid.uuid4().hex[:12]}"
        future = protocol.send_request_async(method, event, msg_id=msg_id)
        try:
            answer = await asyncio.wait_for(future, self.timeout)
        except asyncio.CancelledError:
            self._withdraw(msg_id)
            raise
        except TimeoutError:
            log.warning("%s: no answer within %d ms; continuing without", method, int(self.timeout * 1000))
            self._withdraw(msg_id)
            return None
        except Exception as exc:  # noqa: BLE001 - the client answered with an error: no answer
            log.warning("%s failed on the client: %s; continuing without", method, exc)
            return None
        if answer is None:
            return None
        if not isinstance(answer, dict):
            log.warning("%s answered %s, expected an object; ignored", method, type(answer).__name__)
            return None
        return answer

    def _withdraw(self, msg_id: str) -> None:
        self.server.protocol._request_futures.pop(msg_id, None)
        self.server.protocol._result_types.pop(msg_id, None)
        self.server.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))

    async def before_compact(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._ask("before_compact", event)

    async def compacting(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._ask("compacting", event)

    async def before_tree(self, event: dict[str, Any]) -> dict[str, Any] | None:
        return await self._ask("before_tree", event)
