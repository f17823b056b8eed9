/**
 * The pool's files as a store of records, knowing nothing of what the records say: one JSON
 * file per ID ({@link dev.blockpool.pool.records.RecordStore}) in a versioned format
 * ({@link dev.blockpool.pool.records.RecordFormat}) of fields each record type lists
 * ({@link dev.blockpool.pool.records.RecordCodec}), written crash-safe and durable
 * ({@link dev.blockpool.pool.records.DurableFiles}), and the flocks by which the processes that
 * share a pool take turns ({@link dev.blockpool.pool.records.PoolLockFile},
 * {@link dev.blockpool.pool.records.RecordLock}). Which records there are, and their fields, is
 * the pool's own ({@code RecordCodecs}).
 */
package dev.blockpool.pool.records;
