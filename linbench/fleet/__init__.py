"""One sweep over several GPUs: the device inventory, the placement of one agent per GPU,
shards that keep every comparison on one card, the agent process, the local executor, and
the merge of shard run folders into one run folder (docs/scale-out.md)."""
