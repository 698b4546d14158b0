"""Memorability gate feasibility study on LoCoMo: leave-one-file-out CV. stdlib only."""
import sys, math, re
from collections import Counter
from common import load, tokens, feats, STOP

WITH_CAPTION = '--caption' in sys.argv
files = load(with_caption=WITH_CAPTION)
N = len(files)

# Pre-tokenise.
for f in files:
    f['rows'] = []
    for did, txt, mem in f['turns']:
        tk = tokens(txt)
        f['rows'].append({'id': did, 'text': txt, 'mem': mem, 'tok': tk,
                          'f1': feats(tk, False), 'f2': feats(tk, True)})

def rate(rows, passf):
    m = [r for r in rows if r['mem']]; n = [r for r in rows if not r['mem']]
    kept = sum(1 for r in m if passf(r)) / len(m)
    drop = sum(1 for r in n if not passf(r)) / len(n)
    return kept, drop

# ---------- weighted log-odds with informative Dirichlet prior (Monroe et al. 2008) ----------
def logodds(rows, key, a0=None):
    """Turn-level presence counts. Prior alpha_w = a0 * (background share of w), background = all training turns."""
    cm, cn = Counter(), Counter()
    for r in rows:
        (cm if r['mem'] else cn).update(r[key])
    ym, yn = sum(cm.values()), sum(cn.values())
    bg = cm + cn; tot = ym + yn
    if a0 is None:
        a0 = tot  # prior as strong as the data  -> alpha_w = background count
    z, cnt = {}, {}
    for w, c in bg.items():
        aw = a0 * c / tot
        d = (math.log((cm[w] + aw) / (ym + a0 - cm[w] - aw))
             - math.log((cn[w] + aw) / (yn + a0 - cn[w] - aw)))
        z[w] = d / math.sqrt(1 / (cm[w] + aw) + 1 / (cn[w] + aw))
        cnt[w] = c
    return z, cnt

def chi2(rows, key):
    """Signed chi^2 of 2x2 table presence x memorable (positive when over-represented in memorable)."""
    cm, cn = Counter(), Counter()
    M = sum(r['mem'] for r in rows); Nn = len(rows) - M
    for r in rows:
        (cm if r['mem'] else cn).update(r[key])
    out, cnt = {}, {}
    T = M + Nn
    for w in set(cm) | set(cn):
        a, b = cm[w], cn[w]; c, d = M - a, Nn - b
        den = (a + b) * (c + d) * (a + c) * (b + d)
        x = T * (a * d - b * c) ** 2 / den if den else 0.0
        out[w] = x if a / M > b / Nn else -x
        cnt[w] = a + b
    return out, cnt

def lexicon(score, cnt, thr, minc):
    return {w for w, s in score.items() if s > thr and cnt[w] >= minc}

def gate_lex(lex, key, oov=None, L=None, negstop=False):
    """pass if any feature in lex; oov: set of seen features -> unseen unigram counts as a hit;
    L: also pass if token length >= L."""
    def p(r):
        if L is not None and len(r['tok']) >= L:
            return True
        if r[key] & lex:
            return True
        if oov is not None and any(t not in oov for t in r['tok']):
            return True
        return False
    return p

THRS = [x / 4 for x in range(-16, 17)]  # z thresholds -4..4
def folds():
    for i in range(N):
        yield i, [r for j, f in enumerate(files) if j != i for r in f['rows']], files[i]['rows']

def pr(*a): print(*a); sys.stdout.flush()

def fmt(k, d): return f'{100*k:5.1f}/{100*d:5.1f}'

def study_scored(name, scorer, key, minc, use_oov=False):
    """Sweep thresholds; choose on training by in-sample rule and by inner leave-one-file-out rule."""
    pr(f'\n### {name} (key={key}, min count={minc}, oov-as-hit={use_oov})')
    pr('held-out kept/dropped % per threshold; columns = folds, pooled')
    table = {}
    res_in, res_inner, sizes = [], [], []
    for i, tr, te in folds():
        sc, cnt = scorer(tr, key)
        seen = set(cnt) if use_oov else None
        # For OOV mode, lexicon words are those NOT below thr: pass if any token is salient or unseen.
        for t in THRS:
            lex = lexicon(sc, cnt, t, minc)
            table[(i, t)] = (lex, gate_lex(lex, key, oov=seen))
        # rule A: largest thr with in-sample training kept >= 97%
        best = None
        for t in THRS:
            k, d = rate(tr, table[(i, t)][1])
            if k >= 0.97: best = t
        # rule B: nested leave-one-file-out inside the four training files: largest thr whose
        # minimum inner-held-out kept >= 95% (pooled inner kept >= 97%)
        tr_files = [j for j in range(N) if j != i]
        inner = {t: [] for t in THRS}
        for j in tr_files:
            itr = [r for jj in tr_files if jj != j for r in files[jj]['rows']]
            ite = files[j]['rows']
            isc, icnt = scorer(itr, key)
            iseen = set(icnt) if use_oov else None
            for t in THRS:
                inner[t].append(ite)
                inner[t][-1] = (ite, gate_lex(lexicon(isc, icnt, t, minc), key, oov=iseen))
        bestB = None
        for t in THRS:
            allrows = []
            ok = True
            km = []
            for ite, g in inner[t]:
                k, d = rate(ite, g); km.append(k)
            pooled_k = sum(sum(1 for r in ite if r['mem'] and g(r)) for ite, g in inner[t]) / \
                       sum(sum(1 for r in ite if r['mem']) for ite, g in inner[t])
            if pooled_k >= 0.97: bestB = t
        res_in.append(best); res_inner.append(bestB)
    # print sweep
    pr('| z thr | ' + ' | '.join(files[i]['name'] for i in range(N)) + ' | pooled | mean lexicon size |')
    pr('|---' * (N + 3) + '|')
    for t in THRS:
        cells = []; pk = pm = pd = pn = 0; sz = 0
        for i in range(N):
            lex, g = table[(i, t)]; te = files[i]['rows']
            k, d = rate(te, g); cells.append(fmt(k, d)); sz += len(lex)
            M = sum(r['mem'] for r in te); pm += M; pn += len(te) - M
            pk += k * M; pd += d * (len(te) - M)
        pr(f'| {t:+.2f} | ' + ' | '.join(cells) + f' | {fmt(pk/pm, pd/pn)} | {sz/N:.0f} |')
    for label, sel in (('in-sample train kept>=97%', res_in), ('nested LOFO pooled kept>=97%', res_inner)):
        cells = []; pk = pm = pd = pn = 0; sz = 0; hits = 0
        for i in range(N):
            t = sel[i]
            if t is None: cells.append('none'); continue
            lex, g = table[(i, t)]; te = files[i]['rows']
            k, d = rate(te, g); cells.append(f'z>{t:+.2f}: ' + fmt(k, d)); sz += len(lex)
            hits += (k >= 0.95 and d >= 0.40)
            M = sum(r['mem'] for r in te); pm += M; pn += len(te) - M
            pk += k * M; pd += d * (len(te) - M)
        pr(f'| chosen by {label} | ' + ' | '.join(cells) + (f' | {fmt(pk/pm, pd/pn)} | {sz/N:.0f} | folds meeting target: {hits}/{N}' if pm else ''))
    return table

if __name__ == '__main__':
    pr('# files:', N, '| caption appended:', WITH_CAPTION)
    pr('| file | turns | memorable | fraction | evidence problems |')
    pr('|---|---|---|---|---|')
    T = M = 0
    for f in files:
        n = len(f['rows']); m = sum(r['mem'] for r in f['rows']); T += n; M += m
        pr(f"| {f['name']} | {n} | {m} | {m/n:.3f} | {'; '.join(sorted(set(p[0]+' ('+p[1]+')' for p in f['problems']))) or '-'} |")
    pr(f'| pooled | {T} | {M} | {M/T:.3f} | |')
    for minc in (1, 3):
        study_scored('log-odds unigrams', logodds, 'f1', minc)
        study_scored('log-odds uni+bigrams', logodds, 'f2', minc)
    study_scored('log-odds unigrams, unseen tokens count as hits', logodds, 'f1', 1, use_oov=True)
    study_scored('chi2 unigrams (signed chi2 as score)', chi2, 'f1', 1)
    study_scored('chi2 uni+bigrams (signed chi2 as score)', chi2, 'f2', 1)
