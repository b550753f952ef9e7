-- The epoch a connection tells an executor address next is past every credential minted for it
-- (Executors.nextEpoch): read by this index rather than a scan of all credentials.

CREATE INDEX credentials_executor_epoch ON credentials (executor_id, epoch) WHERE executor_id IS NOT NULL;
