"""Shared loader/tokeniser for the memorability-gate feasibility study (stdlib only)."""
import json, glob, os, re, unicodedata, math
from collections import Counter

DATA = '/work/shared/data/locomo'
ID_RE = re.compile(r'^D(\d+):(\d+)$')

def parse_evidence(ev, valid):
    """Return (ids, problems). Split on ';', ',' or whitespace; repair 'D:11:26' -> 'D11:26'."""
    ids, bad = [], []
    for raw in ev if isinstance(ev, list) else [ev]:
        for piece in re.split(r'[;,\s]+', str(raw).strip()):
            if not piece:
                continue
            p = piece
            m = ID_RE.match(p)
            if not m:
                m2 = re.match(r'^D:?(\d+):(\d+)$', p)   # stray colon repair
                if m2:
                    p = f'D{m2.group(1)}:{m2.group(2)}'
                    bad.append((piece, 'repaired->' + p))
                    m = ID_RE.match(p)
            if not m:
                bad.append((piece, 'unparseable')); continue
            if p not in valid:
                bad.append((piece, 'no such turn')); continue
            ids.append(p)
            if ';' in str(raw) or ' ' in str(raw).strip():
                bad.append((str(raw), 'multi-id string split'))
    return ids, bad

def load(with_caption=False):
    """Return list of dicts per file: name, turns [(dia_id, text, memorable)], problems."""
    out = []
    for f in sorted(glob.glob(os.path.join(DATA, '*.json'))):
        d = json.load(open(f))
        turns = []
        for k in d:
            m = re.fullmatch(r'session_(\d+)', k)
            if m and isinstance(d[k], list):
                for t in d[k]:
                    txt = t['text']
                    if with_caption and t.get('blip_caption'):
                        txt = txt + ' ' + t['blip_caption']
                    turns.append((t['dia_id'], txt))
        valid = {t[0] for t in turns}
        mem, probs = set(), []
        for q in d.get('qa', []):
            ids, bad = parse_evidence(q.get('evidence', []), valid)
            mem.update(ids); probs.extend(bad)
        out.append({'name': os.path.basename(f),
                    'turns': [(i, x, i in mem) for i, x in turns],
                    'problems': probs})
    return out

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*", re.UNICODE)

def tokens(text):
    """NFKC, lower-case (casefold), Unicode word runs; apostrophes inside words kept then removed."""
    t = unicodedata.normalize('NFKC', text).casefold()
    return [w.replace("'", '').replace('’', '') for w in _WORD.findall(t)]

def feats(toks, bigrams):
    s = set(toks)
    if bigrams:
        s.update(a + ' ' + b for a, b in zip(toks, toks[1:]))
    return s

# Generic English stopword + phatic list (hand-written, not learned from LoCoMo labels).
STOP = set("""a about above after again against all am an and any are aren as at be because been before being
below between both but by can cannot could couldn did didn do does doesn doing don down during each few for from
further had hadn has hasn have haven having he her here hers herself him himself his how i if in into is isn it its
itself just let lets me more most mustn my myself no nor not now of off on once only or other ought our ours
ourselves out over own same shan she should shouldn so some such than that thats the their theirs them themselves
then there theres these they this those through to too under until up very was wasn we were weren what whats when
where which while who whom why will with won would wouldn you your yours yourself yourselves im ive id ill youre youve
youll youd hes shes its were theyre weve well wed theyll theyd isnt arent wasnt werent hasnt havent hadnt doesnt dont didnt
wont wouldnt shouldnt cant couldnt mustnt lets thats whos whats heres theres wheres hows also yeah yes yep yup ok okay oh
hey hi hello bye thanks thank thx cool wow great awesome nice good lol haha hahaha hmm um uh ah sure really so totally
definitely absolutely glad happy sounds sound amazing love loved lovely fantastic wonderful incredible super pretty
much like get got go going gonna wanna gotta know think feel see look make keep take one thing things something stuff
way lot lots always never ever still even much many well right true agree guess maybe though anyway anyways
""".split())
