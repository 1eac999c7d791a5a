-- svc store, version 3: the ledger read by period (svc ledger, the
-- dashboard) uses an index on the settlement time.
CREATE INDEX settlements_settled_at ON settlements (settled_at);
