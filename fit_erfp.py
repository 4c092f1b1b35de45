from fit import *
def P(z):
    z = mp.mpf(z)
    if z == 0: return 2/mp.sqrt(mp.pi)
    x = mp.sqrt(z); return mp.erf(x)/x
for thr in [0.75, 0.875, 1.0]:
    for d in [8,9,10,11]: show(f'erfP f64 thr{thr}', P, 0, thr*thr*1.0001, d, np.float64)
