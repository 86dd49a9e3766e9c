// Package deliver moves records from an outbox to sinks, at least once: one Worker per sink
// reads the sink's outbox consumer from its cursor, hands batches to the sink's Publisher and
// acknowledges exactly what the Publisher reports delivered. A failed batch is retried with
// exponential backoff and jitter, without end: records leave the outbox only when delivered or
// dropped by its bounds (counted). A sink that is down holds back only its own cursor: appends
// and other sinks go on, and its outbox depth grows. Each Worker logs one line when its sink
// goes down and one when it comes back, never one per record.
package deliver
