//! Per-op timings on the Flex backend, one thread: `cargo run --release --example opbench`.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]
use std::time::Instant;

use burn::tensor::module::{attention, layer_norm};
use burn::tensor::ops::AttentionModuleOptions;
use burn::tensor::{Bool, Device, Distribution, Tensor};

fn time<F: FnMut()>(n: usize, mut f: F) -> f64 {
    f();
    let t = Instant::now();
    for _ in 0..n {
        f();
    }
    t.elapsed().as_secs_f64() / n as f64
}

fn main() {
    let device = Device::flex();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    pool.install(|| {
        let (b, s) = (16usize, 50usize);
        let t = b * s;
        for (k, n) in [(384usize, 1152usize), (384, 384), (384, 1536), (1536, 384)] {
            let x = Tensor::<2>::random([t, k], Distribution::Default, &device);
            let w = Tensor::<2>::random([k, n], Distribution::Default, &device);
            let secs = time(20, || {
                let _ = x.clone().matmul(w.clone()).into_data();
            });
            let flops = 2.0 * (t * k * n) as f64;
            println!(
                "matmul [{t},{k}]x[{k},{n}]: {:.2} ms, {:.1} GFLOPS",
                secs * 1e3,
                flops / secs / 1e9
            );
            let wt = Tensor::<2>::random([n, k], Distribution::Default, &device);
            let xt = x.clone().swap_dims(0, 1);
            let secs = time(20, || {
                let _ = wt.clone().matmul(xt.clone()).into_data();
            });
            println!(
                "  transposed [{n},{k}]x[{k},{t}]: {:.2} ms, {:.1} GFLOPS",
                secs * 1e3,
                flops / secs / 1e9
            );
            let wts = wt.clone().swap_dims(0, 1);
            let secs = time(20, || {
                let _ = x.clone().matmul(wts.clone()).into_data();
            });
            println!(
                "  x * (W^T view): {:.2} ms, {:.1} GFLOPS",
                secs * 1e3,
                flops / secs / 1e9
            );
        }
        let q = Tensor::<4>::random([b, 12, s, 32], Distribution::Default, &device);
        let mask = Tensor::<4, Bool>::from_data(
            burn::tensor::TensorData::new(vec![false; b * s * s], [b, 1, s, s]),
            &device,
        );
        let secs = time(20, || {
            let _ = attention(
                q.clone(),
                q.clone(),
                q.clone(),
                Some(mask.clone()),
                None,
                AttentionModuleOptions::default(),
            )
            .into_data();
        });
        println!("attention [{b},12,{s},32]: {:.2} ms", secs * 1e3);
        let x = Tensor::<2>::random([t, 384], Distribution::Default, &device);
        let g = Tensor::<1>::ones([384], &device);
        let secs = time(20, || {
            let _ = layer_norm(x.clone(), g.clone(), Some(g.clone()), 1e-12).into_data();
        });
        println!("layer_norm [{t},384]: {:.3} ms", secs * 1e3);
        let qkv = Tensor::<2>::random([t, 1152], Distribution::Default, &device);
        let secs = time(20, || {
            let v = qkv.clone().reshape([b, s, 36, 32]).swap_dims(1, 2);
            let _ = v.narrow(1, 0, 12).into_data();
        });
        println!("split one of q/k/v [{t},1152]: {:.3} ms", secs * 1e3);
        let secs = time(20, || {
            let _ = (x.clone() + x.clone()).into_data();
        });
        println!("add [{t},384]: {:.3} ms", secs * 1e3);
    });
}
