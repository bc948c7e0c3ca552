//! A criterion measurement of the benchmark thread's CPU time: on a machine shared with other
//! work, the wall clock also counts the time the thread waits for a core.

use criterion::Throughput;
use criterion::measurement::{Measurement, ValueFormatter};

/// The benchmark thread's CPU time, in nanoseconds; throughputs in MB/s of CPU time.
pub(crate) struct ThreadCpu;

struct NanosFormatter;

impl ValueFormatter for NanosFormatter {
    fn scale_values(&self, ns: f64, values: &mut [f64]) -> &'static str {
        let (factor, unit) = if ns < 1e3 {
            (1.0, "ns")
        } else if ns < 1e6 {
            (1e-3, "µs")
        } else if ns < 1e9 {
            (1e-6, "ms")
        } else {
            (1e-9, "s")
        };
        values.iter_mut().for_each(|v| *v *= factor);
        unit
    }

    fn scale_throughputs(
        &self,
        _typical: f64,
        throughput: &Throughput,
        values: &mut [f64],
    ) -> &'static str {
        let bytes = match *throughput {
            Throughput::Bytes(b) | Throughput::BytesDecimal(b) => b as f64,
            Throughput::Elements(e) | Throughput::ElementsAndBytes { elements: e, .. } => e as f64,
            Throughput::Bits(b) => b as f64 / 8.0,
        };
        values.iter_mut().for_each(|v| *v = bytes * 1e9 / *v / 1e6);
        "MB/s (CPU time)"
    }

    fn scale_for_machines(&self, _values: &mut [f64]) -> &'static str {
        "ns"
    }
}

impl Measurement for ThreadCpu {
    type Intermediate = cpu_time::ThreadTime;
    type Value = f64;

    fn start(&self) -> Self::Intermediate {
        cpu_time::ThreadTime::now()
    }
    fn end(&self, start: Self::Intermediate) -> f64 {
        start.elapsed().as_nanos() as f64
    }
    fn add(&self, a: &f64, b: &f64) -> f64 {
        a + b
    }
    fn zero(&self) -> f64 {
        0.0
    }
    fn to_f64(&self, v: &f64) -> f64 {
        *v
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        &NanosFormatter
    }
}
