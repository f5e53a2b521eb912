#!/usr/bin/env python3
"""Build Japanese known-item retrieval collections from five Debian documentation packages.

Each collection is one package's Japanese document, split at its section headings:

    eval/debian-docs/<package>/docs.jsonl.gz   {"id", "title", "text"}   id = "<file>#<n>"
    eval/debian-docs/<package>/queries.jsonl   {"id", "query", "relevant_doc_id", "kind", "verbatim_in_doc"}
    eval/debian-docs/SOURCES.json              package, version, .deb SHA256, files used, counts

`text` is the section body without its heading; the query is the heading with its numbering
stripped (kind "title"), the same shape as shared/eval/dev/debian-reference.  <n> counts every
section heading of the file in document order (0 = first), so skipped sections leave gaps.

Input: a directory holding the five .deb files and, next to each, its `dpkg -x` tree:

    mkdir -p /tmp/debdocs && cd /tmp/debdocs
    apt-get download maint-guide-ja=1.2.53 debian-policy-ja=4.6.2.0 \
        debian-edu-doc-ja=2.12.23~deb12u1 aptitude-doc-ja=0.8.13-5 kicad-doc-ja=6.0.11+dfsg-1
    for f in *.deb; do dpkg -x "$f" "${f%%_*}"; done
    cd /work/main && .venv/bin/python eval/recipe/build_debian_docs.py /tmp/debdocs
    .venv/bin/python eval/recipe/build_debian_docs.py --check /tmp/debdocs   # rebuild, compare

The directory may also be given as $DEBDOCS.  Needs Python 3.11 and lxml (in the repo's .venv).
"""
import argparse
import glob
import gzip
import hashlib
import io
import json
import os
import random
import re
import sys
import tarfile
import tempfile
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

import lxml.html

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE.parent / 'debian-docs'

# Per package: the Japanese HTML files (globs relative to the unpacked tree), files left out,
# and the element that holds the document text (XPath; the whole <body> if none matches).
PACKAGES = {
    'maint-guide-ja': {
        'globs': ['usr/share/doc/maint-guide-ja/html/*.ja.html'],
        # title page: credits, copyright and licence, table of contents
        'exclude': [r'/index\.ja\.html$'],
        'root': None,
    },
    'debian-policy-ja': {
        'globs': ['usr/share/doc/debian-policy/ja/policy.html/*.html'],
        # index.html: title, licence and table of contents; ap-license: the GPL notice;
        # genindex/search: generated index and search page
        'exclude': [r'/(index|genindex|search|ap-license)\.html$'],
        'root': '//div[@role="main"]',
    },
    'debian-edu-doc-ja': {
        # The package also ships the previous release's manual (bullseye), an older edition of
        # the same text: most of its sections would be near-duplicates, so only bookworm is used.
        'globs': ['usr/share/doc/debian-edu-doc-ja/debian-edu-bookworm-manual.html'],
        'exclude': [],
        'root': None,
    },
    'aptitude-doc-ja': {
        'globs': ['usr/share/doc/aptitude/html/ja/*.html'],
        # index.html: title page and table of contents; ld-idm*.html: long descriptions of
        # screenshots (DocBook "longdesc" pages)
        'exclude': [r'/index\.html$', r'/ld-idm\d+\.html$'],
        'root': None,
    },
    'kicad-doc-ja': {
        'globs': ['usr/share/doc/kicad/help/ja/*.html'],
        'exclude': [],
        'root': '//div[@id="content"]',
    },
}

MIN_BODY = 80            # characters of body text
MIN_JA_SHARE = 0.30      # kana+kanji / (kana+kanji + ASCII letters) in the body's prose (its
                         # <pre> lines, commands and file listings, left out): below it the section
                         # is mostly untranslated English
MAX_DOCS_GZ = 3_000_000  # bytes; above this a collection is sampled (seeded)
SAMPLE_SEED = 20240601

JA_CHAR = r'\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f'
JA = re.compile(f'[{JA_CHAR}]')
LATIN = re.compile(r'[A-Za-z]')
# characters between which a line break in the HTML source is no space (CSS segment-break rule)
WIDE = f'[{JA_CHAR}\u3000-\u303f\uff01-\uff60]'
WIDE_BREAK = re.compile(f'(?<={WIDE})[ \\t\\r]*\\n\\s*(?={WIDE})')

HEADINGS = {'h1': 1, 'h2': 2, 'h3': 3, 'h4': 4, 'h5': 5, 'h6': 6}
BLOCK = {'address', 'article', 'aside', 'blockquote', 'br', 'caption', 'dd', 'div', 'dl', 'dt',
         'figcaption', 'figure', 'footer', 'header', 'hr', 'li', 'ol', 'p', 'pre', 'section',
         'table', 'tbody', 'td', 'tfoot', 'th', 'thead', 'tr', 'ul'} | set(HEADINGS)


def _has_class(c):
    # never the <body> (asciidoctor gives it class "toc2")
    return f'//*[not(self::body)][contains(concat(" ", normalize-space(@class), " "), " {c} ")]'


# removed before reading: navigation, tables of contents, lists of figures, page furniture,
# links to screenshot descriptions, footnote markers, and the footnote texts that DocBook and
# asciidoctor gather at the end of a page, away from their section (Sphinx leaves them in place:
# they stay as text)
DROP_XPATH = ' | '.join(
    ['//script', '//style', '//head', '//*[@id="toc"]', '//*[@id="toctitle"]', '//*[@id="footer"]',
     '//*[@id="footnotes"]',
     '//sup[.//a[contains(concat(" ", normalize-space(@class), " "), " footnote ")]]',
     '//a[contains(concat(" ", normalize-space(@class), " "), " footnote ")]',
     '//sup[contains(concat(" ", normalize-space(@class), " "), " footnote ")]']
    + [_has_class(c) for c in ('navheader', 'navfooter', 'toc', 'toc2', 'list-of-tables',
                               'list-of-figures', 'list-of-examples', 'toctree-wrapper',
                               'headerlink', 'sphinxsidebar', 'related', 'longdesc-link',
                               'footnotes', 'footnote-reference')])
# a heading inside one of these is a caption within the text (注記, 警告, ...), not a section
INLINE_HEADING_PARENTS = {'note', 'warning', 'tip', 'caution', 'important', 'sidebar',
                          'admonitionblock', 'admonition', 'sidebarblock', 'exampleblock'}

# licence, copyright and credits sections (the whole heading, numbering stripped; case-sensitive so
# that maint-guide's section on the debian/copyright file, headed "copyright", stays), and bodies
# that are a copyright notice
BOILERPLATE = re.compile(
    r'^(?:著作権(?:と著者|表示)?|ライセンス|使用許諾(?:書)?|クレジット|謝辞|Copyright(?: and authors)?'
    r'|Licen[cs]e|Credits|GNU General Public License|GNU GENERAL PUBLIC LICENSE'
    r'|TERMS AND CONDITIONS.*)$')
BOILERPLATE_BODY = re.compile(r'^(?:This document is )?Copyright\s*(?:\(C\)|©)')
REPEAT_LEN, REPEAT_SECTIONS = 40, 5   # a line of >= 40 characters found in >= 5 sections
TOC_SHARE = 0.8          # a body >= 80% of whose lines are mostly internal-link text, or are
                         # section headings, is a contents list
# headings that name a kind of section rather than one section (document structure words):
# such sections stay as documents but are never queries
GENERIC = {
    '概要', 'はじめに', '始めに', 'まえがき', '序文', '序論', '序章', '導入', '紹介', 'イントロダクション',
    '例', '例題', '実例', '使用例', '例文', 'サンプル', '注意', '注記', '注', '注意事項', '警告', 'ヒント',
    '説明', '解説', '書式', '名前', 'オプション', '関連項目', '参照', '参考', '参考文献', '著者', '作者',
    '目次', '索引', 'まとめ', '要約', '結論', '背景', '目的', '前提条件', '必要条件', '要件', '使い方',
    '使用方法', '基本', '設定', 'その他', '一般', '詳細', '付録', '謝辞', '履歴', 'バグ', '環境変数',
    'ファイル', '戻り値', '返り値', '終了ステータス', 'メニュー', 'ツールバー', '表示',
    'overview', 'introduction', 'example', 'examples', 'note', 'notes', 'options', 'description',
    'see also', 'authors', 'summary', 'usage',
}
# leading numbering, stripped once: "2.1. ", "A.1. ", "26. " (a plain number needs its dot, so
# "32 ビット" keeps its 32), then a chapter or appendix label: "第3章 ", "付録A - ", "Appendix B - "
NUMBERING = re.compile(
    r'^(?:(?:[A-Z]|\d+)(?:\.\d+)*\.\s+)?'
    r'(?:(?:第\s*[0-9０-９一二三四五六七八九十百]+\s*[章節部]|付録\s*[A-ZＡ-Ｚ0-9]+|Appendix\s+[A-Z0-9]+'
    r'|Chapter\s+\d+)(?:\s*[-–—:：]\s*|\s+|$))?')
TRAILING = re.compile(r'[\s:：。]+$')


def norm_inline(s):
    s = WIDE_BREAK.sub('', s)
    return re.sub(r'\s+', ' ', s).strip()


def heading_text(el):
    return unicodedata.normalize('NFC', norm_inline(el.text_content()))


def strip_numbering(h):
    return TRAILING.sub('', NUMBERING.sub('', h, count=1)).strip()


def classes(el):
    return set((el.get('class') or '').split())


def is_section_heading(el):
    if el.tag not in HEADINGS:
        return False
    cls = classes(el)
    # DocBook marks section titles class="title"; author, credit and subtitle lines are h3 too
    if cls and 'title' not in cls:
        return False
    return not any(classes(anc) & INLINE_HEADING_PARENTS for anc in el.iterancestors())


BR = object()


class Heading:
    def __init__(self, el):
        self.el = el


def walk(el, out, in_pre=False, in_link=False):
    """Flatten el (and its tail) into (text, in_pre, in_link) pieces, BR and Heading markers.

    in_link: inside a link to another part of the document (used to spot contents lists)."""
    tag = el.tag if isinstance(el.tag, str) else None
    if tag is None:                       # comment or processing instruction
        if el.tail:
            out.append((el.tail, in_pre, in_link))
        return
    if tag in HEADINGS and is_section_heading(el):
        out.append(Heading(el))
    else:
        block = tag in BLOCK
        pre = in_pre or tag == 'pre'
        href = el.get('href') if tag == 'a' else None
        link = in_link or (href is not None and not re.match(r'[a-z]+:', href))
        if block:
            out.append(BR)
        if el.text:
            out.append((el.text, pre, link))
        for c in el:
            walk(c, out, pre, link)
        if tag in ('td', 'th'):
            out.append((' ', pre, link))
        if block:
            out.append(BR)
    if el.tail:
        out.append((el.tail, in_pre, in_link))


def body_text(pieces):
    """(text, prose, link_lines): the section body; the same without preformatted (code) lines;
    the share of its lines that are contents entries: mostly (>= half their characters) internal
    link text, or short (<= 40 characters) and starting with an internal link."""
    lines, cur = [], []

    def nonblank(t):
        return len(re.sub(r'\s', '', t))

    def flush():
        if not cur:
            return
        if any(p[1] for p in cur):
            # preformatted: keep its lines, squeeze runs of blanks within a line
            for ln in ''.join(p[0] for p in cur).split('\n'):
                lines.append((re.sub(r'[ \t\r\f\v\u00a0]+', ' ', ln).strip(), True, False))
        else:
            ln = norm_inline(''.join(p[0] for p in cur))
            linked = sum(nonblank(p[0]) for p in cur if p[2])
            first = next((p for p in cur if p[0].strip()), None)
            entry = first is not None and first[2] and nonblank(ln) <= 40   # "リンク HowTo"
            lines.append((ln, False, entry or linked * 2 >= nonblank(ln) > 0))
        cur.clear()

    for p in pieces:
        if p is BR:
            flush()
        else:
            cur.append(p)
    flush()
    lines = [x for x in lines if x[0]]
    text = '\n'.join(ln for ln, _, _ in lines)
    prose = '\n'.join(ln for ln, pre, _ in lines if not pre)
    share = sum(lk for _, _, lk in lines) / max(1, len(lines))
    return unicodedata.normalize('NFC', text), unicodedata.normalize('NFC', prose), share


def sections_of(path, root_xpath):
    tree = lxml.html.document_fromstring(Path(path).read_bytes())
    for el in tree.xpath(DROP_XPATH):
        parent = el.getparent()
        if parent is None:
            continue
        if el.tail:                       # keep the text that follows a removed element
            prev = el.getprevious()
            if prev is not None:
                prev.tail = (prev.tail or '') + el.tail
            else:
                parent.text = (parent.text or '') + el.tail
        parent.remove(el)
    roots = tree.xpath(root_xpath) if root_xpath else []
    root = roots[0] if roots else tree.find('body')
    pieces = []
    walk(root, pieces)
    secs, cur = [], None
    for p in pieces:
        if isinstance(p, Heading):
            cur = {'heading': heading_text(p.el), 'level': HEADINGS[p.el.tag], 'pieces': []}
            secs.append(cur)
        elif cur is not None:
            cur['pieces'].append(p)
    return [(s['heading'], s['level']) + body_text(s['pieces']) for s in secs]


def ja_share(text):
    j = len(JA.findall(text))
    return j / max(1, j + len(LATIN.findall(text)))


def deb_info(path):
    """Package and Version from the .deb's control file (ar archive; control.tar.{xz,gz})."""
    data = Path(path).read_bytes()
    assert data[:8] == b'!<arch>\n', path
    pos = 8
    while pos < len(data):
        name = data[pos:pos + 16].decode().strip().rstrip('/')
        size = int(data[pos + 48:pos + 58].decode().strip())
        body = data[pos + 60:pos + 60 + size]
        pos += 60 + size + (size & 1)
        if name.startswith('control.tar'):
            if name.endswith('.zst'):
                raise SystemExit(f'{path}: zstd control archive; unpack it with dpkg-deb instead')
            with tarfile.open(fileobj=io.BytesIO(body)) as tf:
                member = next(m for m in tf.getmembers() if m.name.lstrip('./') == 'control')
                control = tf.extractfile(member).read().decode()
            fields = dict(re.findall(r'^(\w[\w-]*):\s*(.*)$', control, re.MULTILINE))
            return fields['Package'], fields['Version'], hashlib.sha256(data).hexdigest()
    raise SystemExit(f'{path}: no control archive')


def build_package(src, pkg, conf, stats):
    debs = sorted(glob.glob(os.path.join(src, f'{pkg}_*.deb')))
    if len(debs) != 1:
        raise SystemExit(f'need exactly one {pkg}_*.deb in {src}, found {len(debs)}')
    name, version, sha = deb_info(debs[0])
    assert name == pkg, (name, pkg)
    tree = os.path.join(src, pkg)
    files = sorted({f for g in conf['globs'] for f in glob.glob(os.path.join(tree, g))})
    files = [f for f in files if not any(re.search(x, f) for x in conf['exclude'])]
    if not files:
        raise SystemExit(f'{pkg}: no document files under {tree} (did you dpkg -x it there?)')

    secs = []
    for f in files:
        base = os.path.basename(f)
        for n, (heading, _level, text, prose, linked) in enumerate(sections_of(f, conf['root'])):
            secs.append((base, n, strip_numbering(heading), text, prose, linked))
    all_headings = {h for _, _, h, _, _, _ in secs}
    # a long line repeated in many sections is page furniture (maint-guide opens every chapter
    # with the same notice about its successor): drop it everywhere before filtering
    seen_in = Counter(ln for s in secs for ln in set(s[3].split('\n')) if len(ln) >= REPEAT_LEN)
    repeated = {ln for ln, k in seen_in.items() if k >= REPEAT_SECTIONS}
    if repeated:
        stats['repeated_lines_removed'] = sum(seen_in[ln] for ln in repeated)
        secs = [(base, n, h, *('\n'.join(ln for ln in x.split('\n') if ln not in repeated)
                                for x in (text, prose)), linked)
                for base, n, h, text, prose, linked in secs]

    docs, seen_body = [], set()
    for base, n, heading, text, prose, linked in secs:
        stats['sections'] += 1
        lines = text.split('\n')
        if BOILERPLATE.match(heading) or BOILERPLATE_BODY.match(text):
            stats['skip_boilerplate'] += 1
        elif len(text) < MIN_BODY:
            stats['skip_short'] += 1
        elif (linked >= TOC_SHARE
              or sum(ln in all_headings for ln in lines) >= TOC_SHARE * len(lines)):
            stats['skip_contents_list'] += 1
        elif ja_share(prose) < MIN_JA_SHARE:
            stats['skip_not_japanese'] += 1
        elif text in seen_body:
            stats['skip_duplicate_body'] += 1
        else:
            seen_body.add(text)
            docs.append({'id': f'{base}#{n}', 'title': heading, 'text': text, '_key': (base, n)})
    if not docs:
        raise SystemExit(f'{pkg}: no documents')
    assert len({d['id'] for d in docs}) == len(docs), f'{pkg}: duplicate ids'

    docs.sort(key=lambda d: d['_key'])
    raw_gz = gz_bytes(docs_jsonl(docs))
    sampled = False
    if len(raw_gz) > MAX_DOCS_GZ:
        rng = random.Random(SAMPLE_SEED)
        keep = round(len(docs) * MAX_DOCS_GZ / len(raw_gz) * 0.95)
        stats['sampled_out'] = len(docs) - keep
        docs = sorted(rng.sample(docs, keep), key=lambda d: d['_key'])
        sampled = True

    queries, by_query = [], defaultdict(list)
    for d in docs:
        d['_query'] = d['title']
        by_query[d['_query'].casefold()].append(d['id'])
    for d in docs:
        q = d['_query']
        if len(q) < 2:
            stats['query_empty_or_1char'] += 1
        elif q.casefold() in GENERIC:
            stats['query_generic'] += 1
        elif not JA.search(q):
            stats['query_no_japanese'] += 1
        elif len(by_query[q.casefold()]) > 1:
            stats['query_shared_heading'] += 1
        else:
            queries.append({'id': f'q-{d["id"]}', 'query': q, 'relevant_doc_id': d['id'],
                            'kind': 'title', 'verbatim_in_doc': q in d['text']})
    return docs, queries, {
        'package': pkg, 'version': version, 'deb': os.path.basename(debs[0]),
        'deb_sha256': sha, 'files': [os.path.relpath(f, tree) for f in files],
        'sampled': sampled,
    }


def docs_jsonl(docs):
    return ''.join(json.dumps({'id': d['id'], 'title': d['title'], 'text': d['text']},
                              ensure_ascii=False) + '\n' for d in docs)


def gz_bytes(s):
    buf = io.BytesIO()
    with gzip.GzipFile(filename='', mode='wb', fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(s.encode('utf-8'))
    return buf.getvalue()


def build(src, out):
    out = Path(out)
    sources = []
    for pkg in sorted(PACKAGES):
        stats = Counter()
        docs, queries, info = build_package(src, pkg, PACKAGES[pkg], stats)
        d = out / pkg
        d.mkdir(parents=True, exist_ok=True)
        gz = gz_bytes(docs_jsonl(docs))
        (d / 'docs.jsonl.gz').write_bytes(gz)
        with open(d / 'queries.jsonl', 'w', encoding='utf-8', newline='\n') as fo:
            fo.writelines(json.dumps(q, ensure_ascii=False) + '\n' for q in queries)
        verb = sum(q['verbatim_in_doc'] for q in queries)
        info.update({
            'documents': len(docs), 'queries': len(queries), 'queries_verbatim': verb,
            'text_chars': sum(len(x['text']) for x in docs), 'docs_jsonl_gz_bytes': len(gz),
            'filter_counts': dict(sorted(stats.items())),
        })
        sources.append(info)
        print(f'{pkg} {info["version"]}: {len(docs)} docs, {len(queries)} queries '
              f'({verb} verbatim), {len(gz)} bytes gz; {dict(sorted(stats.items()))}',
              file=sys.stderr)
    meta = {
        'recipe': 'eval/recipe/build_debian_docs.py',
        'thresholds': {'min_body_chars': MIN_BODY, 'min_japanese_share': MIN_JA_SHARE,
                       'contents_list_share': TOC_SHARE,
                       'repeated_line': {'min_chars': REPEAT_LEN, 'min_sections': REPEAT_SECTIONS},
                       'max_docs_jsonl_gz_bytes': MAX_DOCS_GZ, 'sample_seed': SAMPLE_SEED},
        'packages': sources,
    }
    (out / 'SOURCES.json').write_text(json.dumps(meta, ensure_ascii=False, indent=1) + '\n',
                                      encoding='utf-8')


OUTPUTS = ['SOURCES.json'] + [f'{p}/{f}' for p in sorted(PACKAGES)
                              for f in ('docs.jsonl.gz', 'queries.jsonl')]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('src', nargs='?', default=os.environ.get('DEBDOCS'),
                    help='directory with the .deb files and their dpkg -x trees ($DEBDOCS)')
    ap.add_argument('--out', default=str(DEFAULT_OUT))
    ap.add_argument('--check', action='store_true',
                    help='rebuild into a temporary directory and fail if it differs from --out')
    a = ap.parse_args()
    if not a.src:
        ap.error('give the unpacked packages directory or set $DEBDOCS')
    if not a.check:
        build(a.src, a.out)
        return
    with tempfile.TemporaryDirectory() as tmp:
        build(a.src, tmp)
        bad = [f for f in OUTPUTS
               if not (Path(a.out) / f).exists()
               or (Path(a.out) / f).read_bytes() != (Path(tmp) / f).read_bytes()]
    if bad:
        print('differs from the rebuild: ' + ', '.join(bad), file=sys.stderr)
        sys.exit(1)
    print('check ok: rebuild is identical', file=sys.stderr)


if __name__ == '__main__':
    main()
