#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use burn::nn::LinearConfig;
use burn::tensor::{Device, Distribution, Tensor};
use std::time::Instant;

fn main() {
    let device = Device::flex();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(|| {
        for (b, s) in [(32usize, 50usize), (1, 1600)] {
            let x = Tensor::<3>::random([b, s, 384], Distribution::Default, &device);
            let lin = LinearConfig::new(384, 1536).init(&device);
            let _ = lin.forward(x.clone()).into_data();
            let t = Instant::now();
            let n = 10;
            for _ in 0..n {
                let _ = lin.forward(x.clone()).into_data();
            }
            let secs = t.elapsed().as_secs_f64() / n as f64;
            let flops = 2.0 * (b * s) as f64 * 384.0 * 1536.0;
            println!(
                "linear [{b},{s},384]x[384,1536]: {:.2} ms, {:.1} GFLOPS",
                secs * 1e3,
                flops / secs / 1e9
            );
            let x2 = Tensor::<2>::random([b * s, 384], Distribution::Default, &device);
            let w = Tensor::<2>::random([384, 1536], Distribution::Default, &device);
            let t = Instant::now();
            for _ in 0..n {
                let _ = x2.clone().matmul(w.clone()).into_data();
            }
            let secs = t.elapsed().as_secs_f64() / n as f64;
            println!(
                "matmul 2d [{},384]x[384,1536]: {:.2} ms, {:.1} GFLOPS",
                b * s,
                secs * 1e3,
                flops / secs / 1e9
            );
        }
    });
}
