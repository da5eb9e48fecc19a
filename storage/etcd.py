"""The etcd backend of `storage.interface.Storage`, for several minikcp processes on one etcd.

It speaks etcd's v3 gRPC API through the generated stubs that the `aetcd` package ships (its
client hides range limits, revisions and progress, so it is not used). Writes are transactions
that compare mod revisions, as kube-apiserver's are; `events_since` is one prefix watch with
previous values.

etcd must accept requests of MAX_VALUE_BYTES and more (`--max-request-bytes=4194304`; its
default is 1.5 MiB). Where etcd differs from the SQLite backend: a transaction takes one revision
whatever it changes, so `delete_prefix` gives all its deletions one revision (one event each);
and the revision counter also moves for writes outside KEY_ROOT by other etcd clients.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from types import TracebackType
from typing import Any

import grpc  # type: ignore[import-untyped, import-not-found, unused-ignore]
from aetcd import rpc  # type: ignore[import-untyped, import-not-found, unused-ignore]

from storage import errors, keys
from storage.types import KEY_ROOT, Event, EventType, Item, RangeResult

_ROOT = KEY_ROOT.encode()
_ROOT_END = keys.prefix_end(KEY_ROOT).encode()
_MOD = rpc.Compare.CompareTarget.Value("MOD")
_VERSION = rpc.Compare.CompareTarget.Value("VERSION")
_EQUAL = rpc.Compare.CompareResult.Value("EQUAL")
_GREATER = rpc.Compare.CompareResult.Value("GREATER")
_DELETE = rpc.Event.EventType.Value("DELETE")


class EtcdStorage:
    """A store in etcd; create it with `await open("host:port")`."""

    def __init__(self, channel: Any, *, timeout: float) -> None:
        self._channel = channel
        self._kv = rpc.KVStub(channel)
        self._watch = rpc.WatchStub(channel)
        self._timeout = timeout
        self._compacted = 0

    @classmethod
    async def open(cls, address: str, *, timeout: float = 5.0) -> EtcdStorage:
        """Connect to etcd at host:port; StoreUnavailable if it does not answer."""
        # Lists and watch responses (a prefix deletion with previous values) can be far larger
        # than gRPC's default 4 MiB limit for one message.
        limits = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
        store = cls(grpc.aio.insecure_channel(address, options=limits), timeout=timeout)
        try:
            await store.current_revision()
            store._compacted = await store._probe_compacted()
        except BaseException:
            await store.close()
            raise
        return store

    async def __aenter__(self) -> EtcdStorage:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        await self._channel.close()

    async def _call(self, method: Any, request: Any) -> Any:
        try:
            return await method(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as err:
            raise _translate(err) from None

    # Reads

    def cached(self, key: str) -> Item | None:
        return None  # every read asks etcd

    async def get(self, key: str) -> Item | None:
        name = keys.check_key(key).encode()
        reply = await self._call(self._kv.Range, rpc.RangeRequest(key=name))
        return _item(reply.kvs[0]) if reply.kvs else None

    async def range(
        self,
        prefix: str,
        *,
        limit: int = 0,
        start_after: str | None = None,
        at_revision: int | None = None,
    ) -> RangeResult:
        prefix, limit, start_after, at_revision = keys.check_range(
            prefix, limit=limit, start_after=start_after, at_revision=at_revision
        )
        low = start_after + "\x00" if start_after is not None and start_after >= prefix else prefix
        request = rpc.RangeRequest(
            key=low.encode(),
            range_end=keys.prefix_end(prefix).encode(),
            limit=limit,
            revision=at_revision or 0,
            sort_order=rpc.RangeRequest.SortOrder.Value("ASCEND"),
            sort_target=rpc.RangeRequest.SortTarget.Value("KEY"),
        )
        try:
            reply = await self._kv.Range(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as err:
            details = err.details() or ""
            if at_revision is not None and "compacted" in details:
                self._compacted = max(self._compacted, await self._probe_compacted())
                raise errors.Compacted(at_revision, self._compacted) from None
            if at_revision is not None and "future revision" in details:
                raise errors.FutureRevision(at_revision, await self.current_revision()) from None
            raise _translate(err) from None
        if at_revision is not None and at_revision < self._compacted:
            raise errors.Compacted(at_revision, self._compacted)
        return RangeResult(
            items=[_item(kv) for kv in reply.kvs],
            revision=at_revision or reply.header.revision,
            more=bool(reply.more),
        )

    async def count(self, prefix: str) -> int:
        prefix = keys.check_prefix(prefix)
        request = rpc.RangeRequest(
            key=prefix.encode(), range_end=keys.prefix_end(prefix).encode(), count_only=True
        )
        reply = await self._call(self._kv.Range, request)
        return int(reply.count)

    async def current_revision(self) -> int:
        reply = await self._call(
            self._kv.Range, rpc.RangeRequest(key=_ROOT, range_end=_ROOT_END, count_only=True)
        )
        return int(reply.header.revision)

    async def compacted_revision(self) -> int:
        return self._compacted

    # Writes: each is one transaction whose failure branch reads the key back.

    async def create(self, key: str, value: bytes) -> Item:
        name, value = keys.check_key(key).encode(), keys.check_value(value)
        reply = await self._transaction(
            name,
            [_compare(name, _VERSION, _EQUAL, 0)],
            rpc.RequestOp(request_put=_put(name, value)),
        )
        if not reply.succeeded:
            raise errors.KeyExists(key)
        revision = int(reply.header.revision)
        return Item(key, value, revision, revision)

    async def update(self, key: str, value: bytes, *, expected_mod_rev: int) -> Item:
        name, value = keys.check_key(key).encode(), keys.check_value(value)
        expected = keys.check_revision(expected_mod_rev, what="expected_mod_rev")
        reply = await self._transaction(
            name,
            [_compare(name, _VERSION, _GREATER, 0), _compare(name, _MOD, _EQUAL, expected)],
            rpc.RequestOp(request_put=_put(name, value, prev_kv=True)),
        )
        if not reply.succeeded:
            raise _refusal(key, reply)
        previous = reply.responses[0].response_put.prev_kv
        return Item(key, value, int(previous.create_revision), int(reply.header.revision))

    async def delete(self, key: str, *, expected_mod_rev: int | None = None) -> Item:
        name = keys.check_key(key).encode()
        compares = [_compare(name, _VERSION, _GREATER, 0)]
        if expected_mod_rev is not None:
            expected = keys.check_revision(expected_mod_rev, what="expected_mod_rev")
            compares.append(_compare(name, _MOD, _EQUAL, expected))
        reply = await self._transaction(
            name,
            compares,
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=name, prev_kv=True)),
        )
        if not reply.succeeded:
            raise _refusal(key, reply)
        previous = reply.responses[0].response_delete_range.prev_kvs[0]
        return Item(key, previous.value, int(previous.create_revision), int(reply.header.revision))

    async def delete_prefix(self, prefix: str) -> list[Item]:
        start = keys.check_prefix(prefix).encode()
        request = rpc.DeleteRangeRequest(
            key=start, range_end=keys.prefix_end(prefix).encode(), prev_kv=True
        )
        reply = await self._call(self._kv.DeleteRange, request)
        revision = int(reply.header.revision)
        deleted = [
            Item(kv.key.decode(), kv.value, int(kv.create_revision), revision)
            for kv in reply.prev_kvs
        ]
        return sorted(deleted, key=lambda item: item.key)

    async def _transaction(self, name: bytes, compares: list[Any], success: Any) -> Any:
        request = rpc.TxnRequest(
            compare=compares,
            success=[success],
            failure=[rpc.RequestOp(request_range=rpc.RangeRequest(key=name))],
        )
        return await self._call(self._kv.Txn, request)

    async def compact(self, revision: int) -> None:
        revision = keys.check_revision(revision, what="revision")
        current = await self.current_revision()
        if revision > current:
            raise errors.FutureRevision(revision, current)
        if revision <= self._compacted:
            return
        try:
            await self._kv.Compact(
                rpc.CompactionRequest(revision=revision, physical=True), timeout=self._timeout
            )
        except grpc.aio.AioRpcError as err:
            if "compacted" not in (err.details() or ""):  # another process got there first
                raise _translate(err) from None
        self._compacted = max(self._compacted, revision)

    # The event stream

    def events_since(self, revision: int) -> AsyncIterator[Event]:
        revision = keys.check_revision(revision, what="revision")
        return self._follow(revision)

    async def _follow(self, revision: int) -> AsyncIterator[Event]:
        if revision < self._compacted:
            raise errors.Compacted(revision, self._compacted)
        create = rpc.WatchCreateRequest(
            key=_ROOT, range_end=_ROOT_END, start_revision=revision + 1, prev_kv=True
        )
        call = self._watch.Watch()
        try:
            await call.write(rpc.WatchRequest(create_request=create))
            while True:
                reply = await call.read()
                if reply is grpc.aio.EOF:
                    return
                if reply.canceled:
                    if reply.compact_revision:
                        self._compacted = max(self._compacted, int(reply.compact_revision))
                        raise errors.Compacted(revision, int(reply.compact_revision))
                    raise errors.StoreUnavailable(f"etcd ended the watch: {reply.cancel_reason}")
                for event in reply.events:
                    yield _event(event)
        except grpc.aio.AioRpcError as err:
            raise _translate(err) from None
        finally:
            call.cancel()

    async def _probe_compacted(self) -> int:
        """etcd's compacted revision: a watch from revision 1 is refused with it, if any."""
        create = rpc.WatchCreateRequest(key=_ROOT, range_end=_ROOT_END, start_revision=1)
        call = self._watch.Watch()
        try:
            await call.write(rpc.WatchRequest(create_request=create))
            reply = await call.read()
            return int(reply.compact_revision) if reply.canceled else 0
        except grpc.aio.AioRpcError as err:
            raise _translate(err) from None
        finally:
            call.cancel()


def _compare(name: bytes, target: int, result: int, number: int) -> Any:
    field = "version" if target == _VERSION else "mod_revision"
    return rpc.Compare(key=name, target=target, result=result, **{field: number})


def _put(name: bytes, value: bytes, *, prev_kv: bool = False) -> Any:
    return rpc.PutRequest(key=name, value=value, prev_kv=prev_kv)


def _item(kv: Any) -> Item:
    return Item(kv.key.decode(), kv.value, int(kv.create_revision), int(kv.mod_revision))


def _refusal(key: str, reply: Any) -> errors.StorageError:
    """Why a compare failed: the key is gone, or it has another mod revision."""
    found = reply.responses[0].response_range.kvs
    return errors.Conflict(_item(found[0])) if found else errors.NotFound(key)


def _event(event: Any) -> Event:
    kv, previous = event.kv, event.prev_kv
    if event.type == _DELETE:
        return Event(
            EventType.DELETE,
            kv.key.decode(),
            int(kv.mod_revision),
            None,
            int(previous.create_revision),
            previous.value,
            int(previous.mod_revision),
        )
    created = kv.version == 1  # etcd sends an empty prev_kv for a creation
    return Event(
        EventType.PUT,
        kv.key.decode(),
        int(kv.mod_revision),
        kv.value,
        int(kv.create_revision),
        None if created else previous.value,
        0 if created else int(previous.mod_revision),
    )


def _translate(err: Any) -> errors.StorageError:
    return errors.StoreUnavailable(f"etcd: {err.code().name}: {err.details()}")
