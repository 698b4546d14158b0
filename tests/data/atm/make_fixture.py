#!/usr/bin/env python3
"""Writes the ATM-Bench fixture of memdb's tests: a small synthetic life in the benchmark's own
file shapes (emails.json, image_batch_results.json, video_batch_results.json, qa.json), the
answers of an imaginary system (predictions.jsonl), fixed rankings in the benchmark's
retrieval_recall_details.json shape (rankings.json), and the figures those must give
(expected.json), computed here from the design below, not by memdb.

Deterministic: run it again and nothing changes. Needs only Python 3.

Design of the 64 questions (i = 0..63):
- qtype: i % 8 in {0,1,2} number (24), {3,4,5} list_recall (24), {6,7} open_end (16);
- evidence: one id for number and open_end, two for list_recall; questions 0 and 3 have none
  (an abstention and an empty list), question 11 names its first id twice;
- rankings, by p = i % 4 for questions with evidence: p0 evidence at ranks 1..n; p1 at ranks
  3..(2+n); p2 at ranks 6 and 12; p3 not retrieved; ten ranked ids in all, fillers between;
- answers: number correct unless i % 3 == 2; list_recall all items when i % 3 == 0, the
  first of two when i % 3 == 1, a wrong one when i % 3 == 2; open_end answered (the
  judge decides; without one they are not scored).
"""

import json
import os
import random
import shutil
from datetime import datetime, timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(20260425)

CITIES = [
    ("Cambridge", 52.2053, 0.1218, "Market Square, Cambridge"),
    ("London", 51.5072, -0.1276, "Trafalgar Square, Westminster"),
    ("Paris", 48.8566, 2.3522, "Rue de Rivoli, 1er Arrondissement"),
    ("Edinburgh", 55.9533, -3.1883, "Royal Mile, Old Town"),
    ("Lisbon", 38.7223, -9.1393, "Praça do Comércio, Baixa"),
]
SCENES = [
    ("a plate of pasta on a wooden table", "dinner", ["food", "restaurant"], ["Trattoria Roma"], "MENU"),
    ("a crowd in front of a museum", "museum visit", ["city", "crowd"], ["National Gallery"], "OPEN 10-18"),
    ("a cyclist on a bridge over the river", "river bridge", ["bike", "river"], [], ""),
    ("a birthday cake with candles", "birthday cake", ["party", "cake"], ["Sam"], "HAPPY BIRTHDAY"),
    ("a train platform at dusk", "train platform", ["travel", "train"], ["Great Northern"], "PLATFORM 4"),
    ("a beach with pebbles and waves", "beach", ["sea", "beach"], [], ""),
    ("a bookshop window with a cat", "bookshop cat", ["books", "cat"], ["Heffers"], "BOOKS"),
    ("a concert stage with blue lights", "concert", ["music", "night"], ["Corn Exchange"], "TOUR 2023"),
]
EMAIL_KINDS = [
    ("Train ticket receipt", "Subject: Your e-ticket\nCambridge to London King's Cross, single, {amount} with a 16-25 Railcard. Booking ref {code}."),
    ("Dentist appointment booked", "Subject: Appointment confirmed\nDear Alex, your check-up is on {day} at {time} with Dr Patel."),
    ("Book order shipped", "Subject: Your order has shipped\nOrder {code}: 'The Overstory' will arrive in 2 days. Total {amount}."),
    ("Climbing session booked", "Subject: Booking\nYou booked {count} sessions at the climbing wall, {amount} per session."),
    ("Newsletter from the museum", "Subject: This month at the museum\nNew exhibition opening on {day}."),
    ("Dinner with Sam", "Subject: Dinner?\nHi Alex, shall we meet at Trattoria Roma on {day} at {time}? Sam"),
]

start = datetime(2021, 3, 1, 8, 0, 0)


def stamp(t):
    return t.strftime("%Y-%m-%d %H:%M:%S")


emails = []
for n in range(210):
    t = start + timedelta(days=n * 5 + rng.randint(0, 3), minutes=rng.randint(0, 600))
    subject, detail = EMAIL_KINDS[n % len(EMAIL_KINDS)]
    amount = f"£{rng.randint(5, 60)}.{rng.randint(0, 99):02d}"
    day = (t + timedelta(days=rng.randint(2, 20))).strftime("%A %d %B %Y")
    emails.append({
        "id": f"email{t.strftime('%Y%m%d')}{n:04d}",
        "timestamp": stamp(t),
        "short_summary": subject,
        "detail": detail.format(amount=amount, code=f"RX{rng.randint(1000, 9999)}Q",
                                day=day, time=f"{rng.randint(9, 18)}:{rng.choice(['00', '15', '30', '45'])}",
                                count=rng.randint(2, 6)),
    })

images = []
for n in range(110):
    t = start + timedelta(days=n * 9 + rng.randint(0, 5), hours=rng.randint(0, 10), seconds=rng.randint(0, 59))
    city, lat, lon, place = CITIES[n % len(CITIES)]
    caption, short, tags, entities, ocr = SCENES[n % len(SCENES)]
    stem = t.strftime("%Y%m%d_%H%M%S")
    images.append({
        "image_path": f"/home/alex/photos/{stem}.jpg",
        "file_size": 2_000_000 + n,
        "timestamp": t.strftime("%Y:%m:%d %H:%M:%S") if n % 10 else None,
        "location": [round(lat + rng.uniform(-0.01, 0.01), 5), round(lon + rng.uniform(-0.01, 0.01), 5)] if n % 7 else None,
        "location_name": place,
        "city": city,
        "camera_settings": {"f_number": 1.8, "exposure_time": "1/120", "iso": 100, "focal_length": 4.2, "flash": False, "white_balance": "auto"},
        "caption": f"A photo of {caption} in {city}.",
        "short_caption": short,
        "tags": tags,
        "entities": [{"entity": e, "type": "ORG"} for e in entities],
        "ocr_text": ocr,
        "processing_version": "1.0",
        "model_used": "Qwen3-VL-2B-Instruct",
        "processed_at": "2025-06-01T12:00:00Z",
    })

videos = []
for n in range(4):
    t = start + timedelta(days=200 + n * 180, hours=n)
    city, lat, lon, place = CITIES[(n + 2) % len(CITIES)]
    stem = t.strftime("%Y%m%d_%H%M%S")
    videos.append({
        "video_path": f"/home/alex/videos/{stem}.mp4",
        "timestamp": stamp(t),
        "location": [lat, lon],
        "location_name": place,
        "city": city,
        "has_gps": True,
        "duration": 12.5 + n,
        "duration_formatted": f"0:{12 + n}",
        "width": 1920,
        "height": 1080,
        "rotation": 90 if n % 2 else 0,
        "codec": "h264",
        "device": "Pixel 6",
        "num_frames_analyzed": 8,
        "caption": f"A short video of waves in {city}.",
        "short_caption": "waves",
        "tags": ["sea", "video"],
        "entities": [],
        "ocr_text": "",
    })

all_ids = [e["id"] for e in emails] + [i["image_path"].rsplit("/", 1)[1][:-4] for i in images] + \
          [v["video_path"].rsplit("/", 1)[1][:-4] for v in videos]
image_ids = [i["image_path"].rsplit("/", 1)[1][:-4] for i in images]

questions, predictions, rankings = [], [], []
expected_rows = []
used = set()


def pick(pool):
    while True:
        x = rng.choice(pool)
        if x not in used:
            used.add(x)
            return x


for i in range(64):
    kind = i % 8
    qtype = "number" if kind < 3 else ("list_recall" if kind < 6 else "open_end")
    qid = f"atm-fixture-{i:02d}"
    if i == 0:
        question, answer, evidence = "How many times did I visit Tokyo?", "Unknown", []
        prediction = "There is no information about Tokyo."
    elif i == 3:
        question, answer, evidence = "Which photos did I take on the Moon?", "", []
        prediction = ""
    elif qtype == "number":
        e = emails[(i * 7) % len(emails)]
        if "Dentist" in e["short_summary"]:
            e = emails[(i * 7 + 2) % len(emails)]
        used.add(e["id"])
        amount = f"£{10 + i}.50"
        e["detail"] = f"Subject: Receipt {i}\nYour order {i} came to {amount}. Thank you for shopping."
        e["short_summary"] = f"Receipt for order {i}"
        question = f"How much did order {i} cost?"
        answer, evidence = amount, [e["id"]]
        prediction = f"It cost {10 + i}.5 pounds." if i % 3 != 2 else f"£{11 + i}"
    elif qtype == "list_recall":
        a, b = pick(image_ids), pick(image_ids)
        question = f"Which two photos show scene {i}?"
        answer = f"{a}, {b}"
        evidence = [a, b]
        if i == 11:
            evidence = [a, a, b]
        prediction = {0: f"Photos {a} and {b}.", 1: f"Only {a}.", 2: "20000101_000000"}[i % 3]
    else:
        e = pick([x["id"] for x in emails])
        question = f"What was email {e} about?"
        answer = "A booking"
        evidence = [e]
        prediction = "It was about a booking."
    questions.append({"id": qid, "question": question, "answer": answer, "evidence_ids": evidence, "qtype": qtype})
    predictions.append({"id": qid, "answer": prediction, "model": "imaginary"})
    gt = list(dict.fromkeys(evidence))
    fillers = [x for x in all_ids if x not in gt]
    ranked = [None] * 12
    p = i % 4
    if gt:
        slots = {0: [0, 1], 1: [2, 3], 2: [5, 11], 3: []}[p][:len(gt)]
        for slot, g in zip(slots, gt):
            ranked[slot] = g
    k = 0
    for s in range(12):
        if ranked[s] is None:
            ranked[s] = fillers[(i * 13 + k) % len(fillers)]
            k += 1
    ranked = ranked[:10] if p != 2 else ranked[:12]
    rankings.append({"id": qid, "question": question, "gt_evidence_ids": gt, "retrieval_ids": ranked,
                     "retrieval_scores": [round(1.0 / (r + 1), 6) for r in range(len(ranked))]})

# The NIAH pool: question 6's evidence among 25 ids.
pool = [questions[6]["evidence_ids"][0]] + [x for x in all_ids if x not in questions[6]["evidence_ids"]][:24]
questions[6]["niah_evidence_ids"] = pool
# The relative date: question 1 asks about "tomorrow".
e = emails[5]
e["short_summary"] = "Dentist appointment booked"
e["detail"] = "Subject: Appointment confirmed\nDear Alex, your check-up is on Tuesday 9 January 2024 at 10:15 with Dr Patel."
used.add(e["id"])
questions[1].update({"question": "Today is 2024-01-08. When is my dentist appointment?",
                     "answer": "Tomorrow at 10:15", "evidence_ids": [e["id"]]})
predictions[1]["answer"] = "January 9 at 10:15 am"
rankings[1]["gt_evidence_ids"] = [e["id"]]
rankings[1]["retrieval_ids"][1 if 1 % 4 == 0 else 2] = e["id"]  # p1: rank 3
rankings[1]["question"] = questions[1]["question"]


def recall(gt, ranked, k):
    return len(set(gt) & set(ranked[:k])) / len(set(gt))


def score(q, pred):
    """The design's intended score of each answer (see the module doc)."""
    i = int(q["id"].rsplit("-", 1)[1])
    if q["qtype"] == "number":
        return 1.0 if (i == 0 or i == 1 or i % 3 != 2) else 0.0
    if q["qtype"] == "list_recall":
        if i == 3:
            return 1.0  # both empty
        return {0: 1.0, 1: 0.5, 2: 0.0}[i % 3]
    return None


def summarize(rows, ks=(1, 5, 10)):
    with_gt = [r for r in rows if r["gt"]]
    scored = [r for r in rows if r["qs"] is not None]
    joint_rows = [r for r in with_gt if r["qs"] is not None]
    mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
    out = {
        "count": len(rows), "with_evidence": len(with_gt), "empty_evidence": len(rows) - len(with_gt),
        "recall": {f"R@{k}": round(mean([recall(r["gt"], r["ranked"], k) for r in with_gt]), 6) for k in ks},
        "recall@gt": round(mean([recall(r["gt"], r["ranked"], len(r["gt"])) for r in with_gt]), 6),
        "hit@1": round(mean([1.0 if r["ranked"][0] in r["gt"] else 0.0 for r in with_gt]), 6),
        "qs": {"count": len(rows), "scored": len(scored), "not_scored": len(rows) - len(scored),
               "correct": round(sum(r["qs"] for r in scored), 6),
               "accuracy": round(mean([r["qs"] for r in scored]), 6) if scored else None},
        "joint": {f"Joint@{k}": round(mean([r["qs"] * recall(r["gt"], r["ranked"], k) for r in joint_rows]), 6) for k in ks},
        "joint_bool": {f"Joint@{k}": round(mean([(1.0 if r["qs"] > 0 else 0.0) * recall(r["gt"], r["ranked"], k) for r in joint_rows]), 6) for k in ks},
        "joint_strict": {f"Joint@{k}": round(mean([1.0 if r["qs"] > 0 and set(r["gt"]) <= set(r["ranked"][:k]) else 0.0 for r in joint_rows]), 6) for k in ks},
        "joint_count": len(joint_rows),
    }
    return out


rows = [{"qtype": q["qtype"], "gt": list(dict.fromkeys(q["evidence_ids"])), "ranked": r["retrieval_ids"],
         "qs": score(q, p["answer"])} for q, r, p in zip(questions, rankings, predictions)]
expected = {"overall": summarize(rows),
            "by_qtype": {t: summarize([r for r in rows if r["qtype"] == t]) for t in ("number", "list_recall", "open_end")}}


def dump(name, value):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(value, f, ensure_ascii=False, indent=1)
        f.write("\n")


dump("emails.json", emails)
dump("image_batch_results.json", images)
dump("video_batch_results.json", videos)
dump("qa.json", {"qas": questions})
dump("rankings.json", rankings)
dump("expected.json", expected)
with open(os.path.join(HERE, "predictions.jsonl"), "w", encoding="utf-8") as f:
    for p in predictions:
        f.write(json.dumps(p, ensure_ascii=False) + "\n")

# Three small real pictures (JPEGs the project made for its photo fuzz seeds) for the first
# three image records; the other records' pictures are absent, which is not an error.
pictures = os.path.join(HERE, "images")
os.makedirs(pictures, exist_ok=True)
seeds = os.path.join(HERE, "..", "..", "..", "fuzz", "seeds", "photo_file")
for n, seed in enumerate(["gray16.jpg", "odd33x7.jpg", "xmp_iptc.jpg"]):
    shutil.copyfile(os.path.join(seeds, seed), os.path.join(pictures, f"{image_ids[n]}.jpg"))
