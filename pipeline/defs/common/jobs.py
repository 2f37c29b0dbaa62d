"""What every partitioned job shares: its steps retried after an outage, not after a passing error."""

import dagster as dg

# A step fails only after the HTTP layer's own retries (8 attempts, up to a minute apart) are spent, so
# what is left is a longer outage: wait minutes, not seconds. Set on the jobs rather than on the assets so
# that `pmw backfill` and tests report a failure at once instead of sleeping through the retries.
STEP_RETRY_POLICY = dg.RetryPolicy(max_retries=2, delay=60, backoff=dg.Backoff.EXPONENTIAL, jitter=dg.Jitter.PLUS_MINUS)
