"""The request budget on Redis: a sorted set of admitted requests under `pmw:<key>`, scored by their time (ms),
checked and added to by one Lua script, so that hosts never interleave between the count and the insert.

- A restart: the budget asks again until the server is back (request_budget.py), and redis-py's Script object
  loads the script again when the server has forgotten it (NoScriptError), so a running partition carries on.
- Lost state: the marker `pmw:<key>:known` is written with the budget's first request and never expires. A
  Redis that lost its data (restarted without persistence, flushed, the key evicted) has lost the marker too;
  the script then takes the window as full from that moment (the requests the hosts sent just before are
  unknown), so every host waits one window instead of spending a budget that may already be spent. A store
  that never held the budget looks the same: its first request waits one window.
- Requests are timed by each host's clock: hosts sharing a Redis budget keep their clocks in sync (NTP), well
  inside the budget's margin. Every answer is awaited at most PMW_BUDGET_TIMEOUT_S (socket timeouts).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable

import redis
from pyrate_limiter import AbstractBucket, Rate, RateItem
from pyrate_limiter.abstracts.algorithm import ADMITTED, Decision
from redis.backoff import NoBackoff
from redis.retry import Retry

# KEYS[1]: the admitted requests; KEYS[2]: the marker that KEYS[1] is known. ARGV: now (ms), the window (ms),
# the limit, this request's member. Returns -1 when admitted, else the ms until the window admits one more.
ADMIT = """
local now, window, limit = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('EXISTS', KEYS[2]) == 0 then
  for i = 1, limit do
    redis.call('ZADD', KEYS[1], now, 'unknown:' .. now .. ':' .. i)
  end
  redis.call('SET', KEYS[2], now)
end
local start = '(' .. (now - window)
local inside = redis.call('ZCOUNT', KEYS[1], start, '+inf')
if inside < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[4])
  return -1
end
local oldest = redis.call('ZRANGEBYSCORE', KEYS[1], start, '+inf', 'WITHSCORES', 'LIMIT', inside - limit, 1)
return tonumber(oldest[2]) + window - now
"""


class RedisBudgetBucket(AbstractBucket):
    """pyrate-limiter's bucket contract over the sorted set `key`, admitting through ADMIT."""

    def __init__(self, client: redis.Redis, key: str, rate: Rate) -> None:
        self.rates = [rate]
        self._client, self._key, self._marker = client, key, f"{key}:known"
        self._admit = client.register_script(ADMIT)

    def now(self) -> int:
        return time.time_ns() // 1_000_000

    def put(self, item: RateItem) -> bool:
        rate = self.rates[0]
        wait_ms = int(self._admit(keys=[self._key, self._marker],
                                  args=[item.timestamp, rate.interval, rate.limit, f"{item.name}:{uuid.uuid4().hex}"]))
        return self._record(item, ADMITTED if wait_ms < 0 else Decision(failing_rate=rate, retry_after_ms=wait_ms))

    def leak(self, current_timestamp: int | None = None) -> int:
        assert current_timestamp is not None
        return int(self._client.zremrangebyscore(self._key, "-inf", current_timestamp - self.rates[0].interval))

    def flush(self) -> None:
        self._client.delete(self._key)
        self.failing_rate = None

    def count(self) -> int:
        return int(self._client.zcard(self._key))

    def peek(self, index: int) -> RateItem | None:
        found = self._client.zrange(self._key, -1 - index, -1 - index, withscores=True)
        if not found:
            return None
        member, score = found[0]
        return RateItem(name=str(member), timestamp=int(score))


def open_redis_bucket(url: str, key: str, rate: Rate, timeout_s: float) -> tuple[AbstractBucket, Callable[[], None]]:
    """The budget `key` under `pmw:<key>`, over a client that waits at most `timeout_s` for a connection or an
    answer, and never retries by itself (the budget does, within the same timeout)."""
    never = Retry(NoBackoff(), 0)
    client = redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s, retry=never)
    try:
        client.ping()
    except BaseException:
        client.close()
        raise
    return RedisBudgetBucket(client, f"pmw:{key}", rate), client.close
