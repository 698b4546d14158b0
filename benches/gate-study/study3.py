"""Sensitivity: Dirichlet prior strength a0, text+blip_caption, and an in-sample (train=test) optimistic bound."""
import sys
import study
from study import files, N, folds, rate, logodds, lexicon, fmt, pr
from common import load, tokens, feats

def sweep(label, scorer, key='f1', rowsets=None, ts=(0.5, 0.75, 1.0, 1.25, 1.5, 2.0)):
    pr(f'\n#### {label}')
    pr('| z thr | pooled kept/dropped | min kept over folds | min dropped over folds | mean lexicon size |\n|---|---|---|---|---|')
    for t in ts:
        pk = pm = pd = pn = 0; ks = []; ds = []; sz = 0
        for i, tr, te in (rowsets or folds()):
            z, cnt = scorer(tr, key); lx = lexicon(z, cnt, t, 1); sz += len(lx)
            k, d = rate(te, lambda r: bool(r[key] & lx)); ks.append(k); ds.append(d)
            M = sum(r['mem'] for r in te); pm += M; pn += len(te) - M; pk += k * M; pd += d * (len(te) - M)
        pr(f'| {t} | {fmt(pk/pm, pd/pn)} | {100*min(ks):.1f} | {100*min(ds):.1f} | {sz/N:.0f} |')

for a0 in (100, 1000, 10000):
    sweep(f'log-odds unigrams, a0={a0} (alpha_w = a0 * background share)', lambda tr, key, a0=a0: logodds(tr, key, a0))
# in-sample: lexicon learned on the same file it is scored on (optimistic bound, overfits)
sweep('IN-SAMPLE (lexicon learned on all 5 files, scored on each file; optimistic, not valid)',
      logodds, rowsets=[(i, [r for f in files for r in f['rows']], files[i]['rows']) for i in range(N)])
# with caption
cf = load(with_caption=True)
for f, g in zip(files, cf):
    for r, t in zip(f['rows'], g['turns']):
        tk = tokens(t[1]); r['f1c'] = feats(tk, False)
sweep('text + blip_caption, unigrams', logodds, key='f1c')
