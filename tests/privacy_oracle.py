#!/usr/bin/env python3
"""A second, independent implementation of the RDP accountant of trainer/privacy.c, in
multi-precision arithmetic (mpmath only), used to produce and justify the reference values
of tests/test_privacy.c.

    python3 tests/privacy_oracle.py            # prints every reference value (minutes)
    python3 tests/privacy_oracle.py --quick    # the RDP values only

Independent of the C code in how it computes A_alpha = E_{z ~ N(0, s^2)} [(mu(z)/mu0(z))^alpha],
mu = (1 - q) N(0, s^2) + q N(1, s^2), mu0 = N(0, s^2), RDP = log(A_alpha) / (alpha - 1):
  - integer alpha: the binomial sum sum_k C(alpha, k) (1-q)^(alpha-k) q^k exp((k^2-k)/(2 s^2))
    evaluated exactly in 60-digit arithmetic (no log space needed);
  - fractional alpha: the integral itself by mpmath.quad (tanh-sinh) with breakpoints at 0,
    z0 and alpha, 60 digits, not the erfc series the C code uses.
The (epsilon, delta) conversions are written out from the papers: the classic one (Mironov
2017, Proposition 3) and Balle et al. 2020, Theorem 21, with the Bretagnolle-Huber bound
delta >= sqrt(1 - exp(-rdp)) giving epsilon 0 (as TF Privacy does).
"""
import sys

import mpmath as mp

mp.mp.dps = 60

# TF Privacy's compute_dp_sgd_privacy orders (compute_dp_sgd_privacy_lib.py, 2019-2023)
TF_ORDERS = ([1.25, 1.5, 1.75, 2.0, 2.25, 2.5, 3.0, 3.5, 4.0, 4.5] + list(range(5, 64))
             + [128, 256, 512])
# Opacus RDPAccountant.DEFAULT_ALPHAS (opacus/accountants/rdp.py)
OPACUS_ORDERS = [1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64))
# Abadi et al. 2016's moments accountant: lambda = 1..32, i.e. RDP orders 2..33
ABADI_ORDERS = list(range(2, 34))


def log_a(q, sigma, alpha):
    q, s = mp.mpf(q), mp.mpf(sigma)
    if float(alpha).is_integer():
        n = int(alpha)
        total = mp.fsum(mp.binomial(n, k) * (1 - q) ** (n - k) * q ** k
                        * mp.exp(mp.mpf(k * k - k) / (2 * s * s)) for k in range(n + 1))
        return mp.log(total)
    a = mp.mpf(alpha)

    def f(z):
        ratio = (1 - q) + q * mp.exp((2 * z - 1) / (2 * s * s))
        return mp.npdf(z, 0, s) * ratio ** a

    z0 = s * s * mp.log(1 / q - 1) + mp.mpf(1) / 2
    pts = sorted(set([mp.mpf(0), z0, a]))
    lo, hi = min(pts) - 80 * s, max(pts) + 80 * s
    return mp.log(mp.quad(f, [lo] + [p for p in pts if lo < p < hi] + [hi]))


def rdp(q, sigma, alpha):
    if q == 0:
        return mp.mpf(0)
    if q == 1:
        return mp.mpf(alpha) / (2 * mp.mpf(sigma) ** 2)
    return log_a(q, sigma, alpha) / (mp.mpf(alpha) - 1)


def eps_of(r, alpha, delta, classic):
    a, d = mp.mpf(alpha), mp.mpf(delta)
    if d * d + mp.expm1(-r) >= 0:
        return mp.mpf(0)
    if classic:
        e = r - mp.log(d) / (a - 1)
    else:
        e = r + mp.log1p(-1 / a) - (mp.log(d) + mp.log(a)) / (a - 1)
    return max(e, mp.mpf(0))


def epsilon(q, sigma, steps, delta, orders, classic, kl=True):
    best = None
    for a in orders:
        r = steps * rdp(q, sigma, a)
        if kl:
            e = eps_of(r, a, delta, classic)
        else:  # Opacus: the formula alone
            e = r + mp.log1p(-1 / mp.mpf(a)) - (mp.log(delta) + mp.log(a)) / (mp.mpf(a) - 1)
        if best is None or e < best[0]:
            best = (e, a)
    return best


def show(label, value):
    print(f"{label:64s} {mp.nstr(value, 17)}")


def main():
    print("# single-step RDP")
    for q, s, a in [(0.01, 2.5, 1.5), (0.01, 2.5, 2.5), (0.01, 2.5, 5), (0.01, 2.5, 50),
                    (0.01, 2.5, 100), (0.1, 2, 5), (0.05, 1.0, 2), (0.05, 1.0, 7.5),
                    (0.2, 0.7, 3), (0.2, 0.7, 12.25), (0.001, 5.0, 32), (0.5, 0.5, 2.5),
                    (0.5, 1.0, 1.25), (0.9, 3.0, 6.5), (1e-5, 0.3, 256.1), (0.3, 0.3, 1.75),
                    (0.5, 100.0, 1.25), (0.5, 100.0, 1.5), (0.5, 100.0, 1.75)]:
        show(f"rdp(q={q}, sigma={s}, alpha={a})", rdp(q, s, a))
    if "--quick" in sys.argv:
        return
    print("# epsilon (value, best order)")
    cases = [
        # TF Privacy compute_dp_sgd_privacy_test.py Test0/1/2: q = b/N, steps ceil(E N / b)
        ("tf_test0", 150 / 60000, 1.3, 6000, 1e-5, TF_ORDERS),
        ("tf_test1", 100 / 100000, 1.0, 30000, 1e-7, TF_ORDERS),
        ("tf_test2", 1024 / 100000000, 0.1, 976563, 1e-7, TF_ORDERS),
        # TF Privacy tutorials/README.md: MNIST N 60000, batch 256, noise 1.1, 60 epochs
        ("mnist_1.1_60ep", 256 / 60000, 1.1, 14063, 1e-5, TF_ORDERS),
        ("mnist_1.12_60ep", 256 / 60000, 1.12, 14063, 1e-5, TF_ORDERS),
        ("mnist_1.3_15ep", 256 / 60000, 1.3, 3516, 1e-5, TF_ORDERS),
        ("mnist_0.7_45ep", 256 / 60000, 0.7, 10547, 1e-5, TF_ORDERS),
        # the tutorial's own compute_epsilon (mnist_dpsgd_tutorial.py, 2019): epochs x
        # (60000 // 256) steps, orders 1.1, 1.2, ..., 10.9, 12, ..., 63 (Opacus's list)
        ("mnist_1.3_15ep_tutorial", 256 / 60000, 1.3, 15 * 234, 1e-5, OPACUS_ORDERS),
        ("mnist_0.7_45ep_tutorial", 256 / 60000, 0.7, 45 * 234, 1e-5, OPACUS_ORDERS),
        # Abadi et al. 2016 section 3.1: q 0.01, sigma 4, T 10000, delta 1e-5
        ("abadi_tf_orders", 0.01, 4.0, 10000, 1e-5, TF_ORDERS),
        ("abadi_lambda_1_32", 0.01, 4.0, 10000, 1e-5, ABADI_ORDERS),
    ]
    for name, q, s, t, d, orders in cases:
        for classic in (False, True):
            e, a = epsilon(q, s, t, d, orders, classic)
            show(f"{name} {'classic' if classic else 'balle'} (order {a})", e)
    # Opacus accountants_test.py test_rdp_accountant: q 0.04, sigma 1.5, int(90 / 0.04) steps
    steps = int(90 / 0.04)
    e, a = epsilon(0.04, 1.5, steps, 1e-5, OPACUS_ORDERS, False, kl=False)
    show(f"opacus q=0.04 sigma=1.5 steps={steps} (order {a})", e)


if __name__ == "__main__":
    main()
