"""Relevance a person can trust: a confidence per result, an honest "no good match" for what the
folder cannot answer, and Japanese spellings that meet in keyword search. Real model, real index."""

from __future__ import annotations

import asyncio
import itertools
import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import EXAMPLE_NOTES, run_oboyu

from oboyu.documents.keywords import match_spans, term_counts, words
from oboyu.index.index_file import IndexFile
from oboyu.index.indexer import Indexer
from oboyu.index.records import embedding_text
from oboyu.index.store import Store
from oboyu.models.token_match import token_match
from oboyu.modes import Mode
from oboyu.search import query as query_module
from oboyu.search.confidence import FEATURES, SURE, model_for
from oboyu.search.languages import ACROSS_LANGUAGES, ACROSS_LANGUAGES_SHORT, across_languages
from oboyu.search.query import search
from oboyu.search.rankers import SqlRanker
from oboyu.tui.app import OboyuApp
from oboyu.tui.widgets import ResultList

# far from every example note (a near topic is another matter: asked how to season nikujaga, the
# one cooking note stands out, and the model calls the curry recipe a match)
ABSENT = "恒星の核融合反応"  # far from every example note: at most 0.015 against a line of 0.039, either engine


def test_spellings_of_one_word_meet() -> None:
    same = [("引越しの準備", "引っ越しの準備"), ("コンピュータ", "コンピューター"), ("學校", "学校"),
            ("みーてぃんぐ", "ミーティング"), ("かれー", "カレー"), ("打合せ", "打ち合わせ"), ("ﾒﾓﾘ", "メモリ")]
    for a, b in same:
        assert words(a) == words(b), (a, b)
    # a word in kana never becomes the kanji of another word: ため is not 為, はい not the counter 杯
    assert words("そのためにはいと言う") == ["その", "ため", "はい", "言う"]
    assert words("データーの保存") == ["でーた", "保存"]  # a katakana word's long vowel is not a hiragana loanword


def test_the_default_model_has_a_fitted_table(embedder) -> None:
    """The model a fresh install builds is the one calibration.json was fitted for."""
    for mode in Mode:
        model = model_for(embedder.info.model_id, mode)
        assert model.features == FEATURES[mode] and 0 < model.threshold < 1


def test_query_says_no_good_match_and_lists_weak_ones_only_when_asked(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES, notes)
    (notes / "home" / "meeting-jp.md").write_text("# 定例ミーティング\n\n来週のミーティングでは予算を決める。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    good = run_oboyu(oboyu_env, "query", "カレーの作り方", "--json")
    assert good.returncode == 0, good.stderr
    found = json.loads(good.stdout)
    assert Path(found[0]["path"]).name == "curry.txt" and not found[0]["weak"] and 0 < found[0]["score"] <= 1
    # --all: the confident ones, then the weak ones marked, numbered as listed
    listing = [line for line in run_oboyu(oboyu_env, "query", "カレーの作り方", "--all", "-k", "5").stdout.splitlines()
               if line[:3].strip().rstrip(".").isdigit()]
    assert [int(line.split(".")[0]) for line in listing] == list(range(1, len(listing) + 1))
    marks = ["(weak)" in line for line in listing]
    assert marks == sorted(marks) and marks[0] is False and marks[-1] is True
    for mode in Mode:
        absent = run_oboyu(oboyu_env, "query", ABSENT, "--mode", mode)
        assert absent.returncode == 1 and absent.stdout == ""
        assert f'no good match for "{ABSENT}"' in absent.stderr or f'no match for "{ABSENT}" (keyword search' in absent.stderr
    assert json.loads(run_oboyu(oboyu_env, "query", ABSENT, "--json").stdout) == []
    filtered = run_oboyu(oboyu_env, "query", "カレーの作り方", "--path", "*.nothing")
    assert filtered.returncode == 1 and filtered.stderr.endswith("(no indexed passage passes the filters)\n"), filtered.stderr
    every = run_oboyu(oboyu_env, "query", ABSENT, "--all", "--json")
    listed = json.loads(every.stdout)
    assert every.returncode == 0 and listed and all(r["weak"] and 0 <= r["score"] < 1 for r in listed)
    # English asked of a Japanese note: where the lines call it no good match (which side this
    # CPU's kernels put it on is not asked here), ranked by meaning, nothing weak, and said so
    assert found[0]["across_languages"] is False
    english = run_oboyu(oboyu_env, "query", "Which receipts should I keep for my taxes?", "--json")
    assert english.returncode == 0, english.stderr
    across = json.loads(english.stdout)
    assert Path(across[0]["path"]).name == "tax-return.md"
    assert {r["across_languages"] for r in across} == {ACROSS_LANGUAGES in english.stderr}
    assert not any(r["weak"] for r in across) or not across[0]["across_languages"]
    as_text = run_oboyu(oboyu_env, "query", "Which receipts should I keep for my taxes?").stdout.splitlines()
    scores = [line.split()[1] for line in as_text if line[2:4] == ". "]
    assert scores and {score == "?" for score in scores} == {across[0]["across_languages"]}, as_text
    floor = run_oboyu(oboyu_env, "query", "Which receipts should I keep for my taxes?", "--min-score", "0.99")
    assert floor.returncode == 1 and (ACROSS_LANGUAGES in floor.stderr) == across[0]["across_languages"], floor.stderr
    # an English question an English note answers (at 1.000) is judged as ever, Japanese notes beside it
    answered = run_oboyu(oboyu_env, "query", "how do I restore the database", "--json")
    assert Path(json.loads(answered.stdout)[0]["path"]).name == "server-runbook.html"
    assert not json.loads(answered.stdout)[0]["across_languages"] and ACROSS_LANGUAGES not in answered.stderr
    # hiragana for a katakana word finds it by its words alone
    kana = run_oboyu(oboyu_env, "query", "みーてぃんぐ", "--mode", "keyword", "--json")
    assert [Path(r["path"]).name for r in json.loads(kana.stdout)][:1] == ["meeting-jp.md"], kana.stderr


def test_a_compound_the_dictionary_does_not_know_is_found_by_its_parts(tmp_path: Path, embedder) -> None:
    from oboyu.index.store import Store
    from oboyu.search import SqlRanker, search

    compound = "ジャーナリングファイルシステムは電源断の後も整合性を保つ。"
    assert "じゃーなりんぐふぁいるしすてむ" in words(compound)  # one unknown word to the dictionary
    assert "::しす" in term_counts(compound) and "::しす" not in term_counts("ファイルシステムを作る")  # known words: none
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "journal.md").write_text(f"# 障害対策\n\n{compound}\n", encoding="utf-8")
    (notes / "fs.md").write_text("# ディスク\n\nファイルシステムを作る前にパーティションを切る。\n", encoding="utf-8")
    (notes / "other.md").write_text("# 料理\n\n玉ねぎを炒めてから煮込む。\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes])
    with Store(db, read_only=True) as store:
        found = search(SqlRanker(store), None, "ファイルシステム", 5, mode=Mode.KEYWORD)
    # the note that holds the words first; the compound by its parts after it, the part marked
    assert [Path(r.path).name for r in found] == ["fs.md", "journal.md"]
    assert [found[1].snippet[a:b] for a, b in found[1].matches] == ["ファイルシステム"]
    assert match_spans("ジャーナリングファイルシステム", set(words("システム"))) == [(11, 15)]


def test_copies_of_a_file_are_one_result(tmp_path: Path, oboyu_env: dict) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    text = "# 経費精算\n\n経費精算の締め日は毎月二十五日。領収書を添えて経理に出す。\n"
    (notes / "経費精算.md").write_text(text, encoding="utf-8")
    (notes / "経費精算 のコピー.md").write_text(text, encoding="utf-8")
    (notes / "旅費.md").write_text("# 旅費\n\n出張の旅費は出張後一週間以内に精算する。\n", encoding="utf-8")
    assert run_oboyu(oboyu_env, "index", str(notes)).returncode == 0
    found = json.loads(run_oboyu(oboyu_env, "query", "経費精算の締め日", "--json", "-k", "2", "--all").stdout)
    # the copy folds into the first result, so the second place goes to another file
    assert {Path(found[0]["path"]).name, *(Path(c).name for c in found[0]["copies"])} == {"経費精算.md", "経費精算 のコピー.md"}
    assert [Path(r["path"]).name for r in found[1:]] == ["旅費.md"] and found[1]["copies"] == []
    assert not found[0]["weak"]  # its copy does not make it look ordinary
    human = run_oboyu(oboyu_env, "query", "経費精算の締め日", "-k", "2").stdout
    assert "same as " in human and human.count("経費精算") >= 2


def test_eval_reports_absent_questions_caught(tmp_path: Path, oboyu_env: dict) -> None:
    docs = tmp_path / "docs.jsonl"
    docs.write_text("\n".join(json.dumps({"id": f.stem, "text": f.read_text(encoding="utf-8")}, ensure_ascii=False)
                              for f in sorted((EXAMPLE_NOTES / "home").iterdir())), encoding="utf-8")
    queries = tmp_path / "queries.jsonl"
    queries.write_text(json.dumps({"query": "カレーの作り方", "relevant_doc_id": "curry"}, ensure_ascii=False), encoding="utf-8")
    absent = tmp_path / "absent.jsonl"
    absent.write_text(json.dumps({"query": ABSENT}, ensure_ascii=False), encoding="utf-8")
    done = run_oboyu(oboyu_env, "eval", "--docs", str(docs), "--queries", str(queries), "--absent", str(absent), "--json")
    assert done.returncode == 0, done.stderr
    hybrid = next(s for s in json.loads(done.stdout) if s["mode"] == "hybrid")
    assert hybrid["absent_no_match"] == 1.0 and hybrid["present_no_match"] == 0.0 and hybrid["recall_at_1"] == 1.0
    assert hybrid["shown_at_10"] == 1.0  # the right file is among what a person is shown
    # --db reused only while it holds these documents, and a question naming none of them is said (a user trial)
    db = tmp_path / "eval.duckdb"
    assert run_oboyu(oboyu_env, "eval", "--docs", str(docs), "--queries", str(queries), "--db", str(db),
                     "--mode", "keyword").returncode == 0
    again = run_oboyu(oboyu_env, "eval", "--docs", str(docs), "--queries", str(queries), "--db", str(db), "--mode", "keyword")
    assert again.returncode == 0 and "reusing the index" in again.stderr, again.stderr
    fewer = tmp_path / "fewer.jsonl"
    fewer.write_text(docs.read_text(encoding="utf-8").splitlines()[0] + "\n", encoding="utf-8")
    other = run_oboyu(oboyu_env, "eval", "--docs", str(fewer), "--queries", str(queries), "--db", str(db), "--mode", "keyword")
    assert other.returncode != 0 and "made of other documents" in other.stderr and "Traceback" not in other.stderr
    db.unlink()  # as the refusal says: the folder of the documents written before is made anew, not added to
    fresh = run_oboyu(oboyu_env, "eval", "--docs", str(fewer), "--queries", str(queries), "--db", str(db),
                      "--mode", "keyword", "--json")
    assert fresh.returncode == 0 and "indexed 1 documents" in fresh.stderr, fresh.stderr
    typo = tmp_path / "typo.jsonl"
    typo.write_text(json.dumps({"query": "カレーの作り方", "relevant_doc_id": "cury"}, ensure_ascii=False), encoding="utf-8")
    missed = run_oboyu(oboyu_env, "eval", "--docs", str(fewer), "--queries", str(typo), "--db", str(db), "--mode", "keyword")
    assert missed.returncode == 0 and "1 of 1 queries name no document" in missed.stderr and "'cury'" in missed.stderr


def test_beside_a_good_match_only_results_under_the_hide_line_are_left_out(
        tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """The two lines through a real search: the same results, judged by lines placed between
    their confidences. The threshold decides whether the query has a good match; beside one, only
    what falls under the hide line is weak."""
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([EXAMPLE_NOTES])
    fitted = model_for(embedder.info.model_id, Mode.HYBRID)
    with Store(db, read_only=True) as store:
        def weak_marks(threshold: float, hide: float) -> list[bool]:
            judge = replace(fitted, threshold=threshold, hide=hide, match_line=None)  # the threshold tells
            monkeypatch.setattr(query_module, "model_for", lambda model_id, mode: judge)
            return [r.weak for r in search(SqlRanker(store), embedder, "カレーの作り方", 5)]

        first = search(SqlRanker(store), embedder, "カレーの作り方", 5)
        confidences = sorted({r.confidence for r in first}, reverse=True)
        assert len(confidences) >= 3, confidences
        top, second = confidences[0], confidences[1]
        between = (top + second) / 2
        # a good match (the best reaches the threshold): the second best is shown though under it
        beside_good = weak_marks(between, second / 2)
        assert beside_good == [r.confidence < second / 2 for r in first]
        assert beside_good.count(False) >= 2
        # the same hide line, but no result reaches the threshold: every one is weak
        assert weak_marks(min(1.0, top * 2), second / 2) == [True] * len(first)
        # one line (hide at the threshold), as before the lower line: only the best is shown
        assert weak_marks(between, between) == [r.confidence < between for r in first]
        assert weak_marks(between, between).count(False) == 1


def test_a_query_whose_tokens_find_no_like_in_the_first_result_has_no_good_match(
        tmp_path: Path, embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the best result is not SURE, the match line tells: the same results, judged by lines
    on either side of the first result's token match."""
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([EXAMPLE_NOTES])
    fitted = model_for(embedder.info.model_id, Mode.HYBRID)
    assert fitted.match_line is not None and 0 < fitted.match_line < 1
    with Store(db, read_only=True) as store:
        def results(match_line: float | None) -> list:
            judge = replace(fitted, hide=0.0, match_line=match_line)
            monkeypatch.setattr(query_module, "model_for", lambda model_id, mode: judge)
            return search(SqlRanker(store), embedder, ABSENT, 5)

        first = results(fitted.match_line)
        assert max(r.confidence for r in first) < SURE
        match = first[0].evidence["token_match"]
        hit = SqlRanker(store).chunks_by_id([first[0].chunk_id])[first[0].chunk_id]
        assert match == round(token_match(embedder, ABSENT, embedding_text(hit.title, hit.heading, hit.text)), 4)
        assert all("token_match" not in r.evidence for r in first[1:])
        assert [r.weak for r in results(match - 0.01)] == [False] * len(first)  # its tokens found their like
        assert [r.weak for r in results(match + 0.01)] == [True] * len(first)  # they did not: no good match
        # without a match line the threshold tells, and no token match is asked
        assert all("token_match" not in r.evidence for r in results(None))


def test_a_query_in_english_among_japanese_results_without_its_words_is_across_languages(embedder) -> None:
    from oboyu.text import written_in

    assert [written_in(t) for t in ("コードフリーズ いつ", "Zoom 会議", "When is the code freeze?", "Café", "ＶＰＮ",
                                    "How do I file 確定申告", "2024-04-08 !!", "3×4")] == \
        ["japanese", "japanese", "latin", "latin", "latin", "latin", None, None]
    note = "# 定例MTG\n\nv3.2 のリリースは QA の遅れで一週間延期。Slack で共有済み。"
    english = "Build the wheel and upload it to the package index."

    def across(query: str, *passages: tuple[str, float]) -> bool:
        return across_languages(query, list(passages), embedder)

    assert across("Why was the release delayed?", (note, 0.0))
    assert across("Why was the release delayed?", (english, 0.0), (note, 0.0))  # a Japanese one further down
    assert across("expense deadline", (note, 0.0))  # keywords, told English by the model's tokenizer
    assert not across("How do I build the wheel?", (english, 0.0), (english, 0.0))
    assert not across("Is QA on Slack?", (note, 0.6))  # a Japanese result holds its words: judged by them
    assert not across("v3.2 のリリースが延びた理由", (note, 0.0))
    # a Japanese question is judged as any, whatever its passages (a man page's options)
    assert not across("リリースの手順", (english, 0.0))
    assert not across("2024", (note, 0.0))  # digits alone are in no writing
    assert not across("How do I file 確定申告", (note, 0.0))  # a Japanese word: judged by its words
    assert not across("Why was the release delayed?")
    assert not across("zzzz qqqq", (note, 0.0))  # no English word


def test_english_keywords_are_told_from_letters_that_are_no_english(embedder) -> None:
    from oboyu.search.languages import in_english

    for typed in ("expense deadline", "fire pit", "wifi password"):
        assert in_english(typed, embedder), typed
    for typed in ("zzzz qqqq", "asdf", "xkcd"):
        assert not in_english(typed, embedder), typed
    assert in_english("When is the code freeze?")  # a function word: no tokenizer needed


def test_letters_neither_the_folder_nor_the_model_knows_have_no_good_match(tmp_path: Path, embedder,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A user trial's `xyzzy plugh` was a good match: its pieces found their like in a passage of
    code. With lines every result passes (as the token match's can, for such pieces), a query in
    Latin letters whose words no passage holds and the model's tokenizer has no piece for is told
    no good match in hybrid mode; one a note holds, or one in English words, is judged as ever."""
    notes = tmp_path / "notes"
    shutil.copytree(EXAMPLE_NOTES, notes)
    (notes / "game.txt").write_text("Type xyzzy to go home. ゲームの合言葉。\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes])
    judge = replace(model_for(embedder.info.model_id, Mode.HYBRID), threshold=0.0, hide=0.0, match_line=0.0)
    monkeypatch.setattr(query_module, "model_for", lambda model_id, mode: judge)
    with Store(db, read_only=True) as store:
        for question, told in (("qwzx vbnm", True), ("blorft snerk", True), ("xyzzy plugh", False),
                               ("fire pit", False), ("passport renewal", False), ("kubernetes", False),
                               ("Москва qzxv", False), ("カレー", False)):  # words of long pieces, another writing
            results = search(SqlRanker(store), embedder, question, 5)
            assert results and all(r.weak for r in results) == told, question
        # vector mode has no keyword leg to say the words are nowhere: judged as ever
        assert not any(r.weak for r in search(SqlRanker(store), embedder, "qwzx vbnm", 5, mode=Mode.VECTOR))


def judged_by_lines_no_result_passes(embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every question told no good match by the usual lines (so judged across languages where it can be)."""
    judge = replace(model_for(embedder.info.model_id, Mode.HYBRID), threshold=1.0, hide=1.0, match_line=1.0)
    monkeypatch.setattr(query_module, "model_for", lambda model_id, mode: judge)


async def asked_in_app(app: OboyuApp, pilot, question: str) -> ResultList:
    """The app's result list once it shows the answer to the question typed."""
    await pilot.press(*question)
    for _ in range(400):
        if app.shown is not None and app.shown.query == question:
            break
        await pilot.pause(0.05)
    await pilot.pause()
    return app.query_one(ResultList)


JAPANESE_NOTES = {"curry.txt", "kyoto-trip.md", "tax-return.md", "weekly-meeting.md"}  # of the example notes


def test_across_languages_japanese_results_are_never_weak(tmp_path: Path, embedder,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines no result can pass: every result of a question in its notes' language is weak; one
    asked across languages has its Japanese results untold (never weak, never less likely), first,
    and its English ones weak, as the lines say (a user trial's English question about golf was
    shown three English notes as if across languages)."""
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([EXAMPLE_NOTES])
    judged_by_lines_no_result_passes(embedder, monkeypatch)
    with Store(db, read_only=True) as store:
        # the example notes hold both languages: an English question meets Japanese results too,
        # typed as a sentence or as keywords; letters that are no English are judged as any query
        for question, across in (("カレーの煮込み時間", False), ("How long do I simmer the curry?", True),
                                 ("What is on the release checklist?", True), ("curry recipe", True),
                                 ("zzzz qqqq", False), ("e-Tax", False)):  # a name a Japanese note holds
            results = search(SqlRanker(store), embedder, question, 10)
            japanese = [Path(r.path).name in JAPANESE_NOTES for r in results]
            assert len(results) == 6 and any(japanese) and not all(japanese), question
            untold = [r.across_languages for r in results]
            assert untold == (japanese if across else [False] * 6), question
            assert untold == sorted(untold, reverse=True), question  # the untold ones first, whatever their rank
            assert [r.weak for r in results] == [not u for u in untold], question
            assert all(r.likely for r in results if r.across_languages), question  # nor set apart as less likely
            # whatever -k; and words alone (keyword mode) are judged as ever
            assert [r.across_languages for r in search(SqlRanker(store), embedder, question, 1)] == [across], question
            by_words = search(SqlRanker(store), embedder, question, 5, mode=Mode.KEYWORD)
            assert not any(r.across_languages for r in by_words), question
        # vector mode judges its ten best whatever -k (a user trial: no good match with -k 3, results with -k 10)
        for k in (1, 3, 10):
            by_meaning = search(SqlRanker(store), embedder, "What is on the release checklist?", k, mode=Mode.VECTOR)
            assert by_meaning[0].across_languages and Path(by_meaning[0].path).name in JAPANESE_NOTES, k


def test_the_app_puts_weak_matches_under_a_divider(tmp_path: Path, embedder) -> None:
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([EXAMPLE_NOTES])

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(100, 30)) as pilot:
            listed = await asked_in_app(app, pilot, ABSENT)
            assert listed.results and all(r.weak for r in listed.results)
            divider = listed.get_option_at_index(0)
            assert divider.disabled and "no good match" in str(divider.prompt)
            assert listed.current is listed.results[0]  # the first weak one, not the divider
            assert "weak" in str(listed.border_title)

    asyncio.run(run())


def test_the_app_says_when_a_question_is_across_languages(tmp_path: Path, embedder,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([EXAMPLE_NOTES])
    judged_by_lines_no_result_passes(embedder, monkeypatch)

    async def run() -> None:
        app = OboyuApp(db, embedder)
        async with app.run_test(size=(80, 24)) as pilot:
            listed = await asked_in_app(app, pilot, "How long do I simmer the curry?")
            assert [r.weak for r in listed.results] == [not r.across_languages for r in listed.results]
            assert listed.results[0].across_languages
            assert str(listed.border_title).endswith(ACROSS_LANGUAGES_SHORT)  # after the counts: a narrow border cuts it

    asyncio.run(run())


def test_one_weak_keyword_match_is_not_scaled_up_to_a_full_leg() -> None:
    from oboyu.search.fusion import convex

    meaning = [("plan-of-exercise", 0.90), ("trip-plan", 0.84), ("curry", 0.80)]
    words_only = [("trip-plan", 1.2)]  # 計画 alone, far below what 運動 and 計画 together would score
    plain = convex({"vector": meaning, "keyword": words_only})
    assert plain[0][0] == "trip-plan"  # min-max: the lone keyword match counts as a perfect one
    capped = convex({"vector": meaning, "keyword": words_only}, ceilings={"keyword": 6.0})
    assert capped[0][0] == "plan-of-exercise" and dict(capped)["trip-plan"] < 1.0
    # a keyword leg whose best reaches the ceiling is scaled as before
    strong = [("trip-plan", 8.0), ("curry", 2.0)]
    assert convex({"keyword": strong}, ceilings={"keyword": 6.0}) == convex({"keyword": strong})


def test_near_level_files_are_ordered_by_their_confidence() -> None:
    from oboyu.search.query import HYBRID, with_confidence

    fused = [("synopsis-words", 0.93), ("the-answer", 0.88), ("far-behind", 0.50)]
    confidence = {"synopsis-words": 0.18, "the-answer": 0.74, "far-behind": 0.99}
    ordered = with_confidence(fused, confidence)
    # level within the confidence's share: the stronger evidence first; far behind: stays behind
    assert [cid for cid, _ in ordered] == ["the-answer", "synopsis-words", "far-behind"]
    assert dict(ordered)["the-answer"] == 0.88 + HYBRID.confidence_share * 0.74
    assert with_confidence(fused, dict.fromkeys(confidence, 0.5))[0][0] == "synopsis-words"  # ties keep fusion's order


def test_the_results_do_not_depend_on_how_many_are_asked(tmp_path: Path, embedder) -> None:
    """Confidence reorders hybrid's best files, those shown by default first; asked for k results,
    a person gets the first k of thirty (a user trial's answer, the fusion's 20th file, was shown
    with -k 20 and hidden with -k 10). On the small mixed dev folder, where some queries' first
    two files come out near level."""
    from oboyu.index.store import Store
    from oboyu.search import SqlRanker, search
    from oboyu.search.evaluate import read_jsonl, write_corpus

    personal = Path(__file__).resolve().parents[2] / "shared" / "eval" / "dev" / "personal"
    if not personal.is_dir():
        pytest.skip(f"the dev sets are not beside the clone ({personal})")
    write_corpus(personal / "docs.jsonl.gz", tmp_path / "docs")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([tmp_path / "docs"])
    line = model_for(embedder.info.model_id, Mode.HYBRID).threshold
    with Store(db, read_only=True) as store:
        for query in (row["query"] for row in read_jsonl(personal / "queries.jsonl")):
            thirty = search(SqlRanker(store), embedder, query, 30)
            for part in ([r for r in thirty if not r.weak], [r for r in thirty if r.weak]):
                for above, below in itertools.pairwise(part):  # by score, but for a far surer one over the line
                    assert above.ranking_score >= below.ranking_score or (
                        above.confidence >= line and above.confidence >= query_module.SURER_BY * below.confidence), \
                        (query, above, below)
            assert not any(r.weak and r.likely for r in thirty), query  # a weak result is never likely
            assert thirty == sorted(thirty, key=lambda r: r.weak)  # shown by default, then left out
            for k in (1, 3, 10):
                asked = search(SqlRanker(store), embedder, query, k)
                assert [r.path for r in asked] == [r.path for r in thirty[:k]], (query, k)


def test_a_build_of_the_default_model_with_another_fingerprint_uses_its_table(embedder) -> None:
    """The default model's calibrated scales come from fp32 inference, whose last bits differ
    between CPUs: a build on another CPU class has another fingerprint, and keeps the fitted table."""
    name = embedder.info.model_id.split("@")[0]
    for mode in Mode:
        assert model_for(f"{name}@000000000000", mode) == model_for(embedder.info.model_id, mode)
        assert model_for(f"{name}@000000000000+openvino", mode) == model_for(embedder.info.model_id, mode)
    assert model_for("someone/another-model@000000000000", Mode.HYBRID).threshold == 0.0  # no table: nothing called weak


def test_spaces_around_a_query_change_nothing(tmp_path: Path, embedder) -> None:
    """A user trial: "データベースの復旧  " scored 0.993 where the same words scored 0.997."""
    from oboyu.index.store import Store
    from oboyu.search import SqlRanker, search

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "db.md").write_text("# データベース\n\n障害のあとはバックアップから復旧する。\n", encoding="utf-8")
    (tmp_path / "docs" / "trip.md").write_text("# 旅行\n\n京都の寺を巡る。\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([tmp_path / "docs"])
    with Store(db, read_only=True) as store:
        plain = search(SqlRanker(store), embedder, "データベースの復旧", 5)
        spaced = search(SqlRanker(store), embedder, "  データベースの復旧 \n", 5)
    assert [(r.path, r.confidence) for r in spaced] == [(r.path, r.confidence) for r in plain]


def test_a_filter_does_not_raise_a_results_confidence(tmp_path: Path, embedder) -> None:
    """Two user trials: "データベースの復旧" gave a reading list 0.018 (under the line), and 0.227,
    a good match, with `--path 個人/`, which left out the notes that answer it: its lead was
    measured over the other files let in. Each result is now weighed against every indexed file."""
    from oboyu.index.store import Store
    from oboyu.search import ResidentIndex, SqlRanker, make_filters, search

    docs = tmp_path / "docs"
    notes = {"個人/読書リスト.md": "# 読書リスト\n\n今年読みたい小説とエッセイ。村上春樹、新しいミステリー。\n",
             "個人/旅行.md": "# 京都旅行\n\n嵐山と金閣寺。湯豆腐。\n", "個人/料理.md": "# カレー\n\n玉ねぎを炒める。\n",
             "仕事/復旧手順.md": "# データベースの復旧\n\n障害のあとは夜間のバックアップから復旧する。\n",
             "仕事/サーバー.md": "# サーバー障害\n\nDBサーバーが落ちたら再起動してログを見る。\n",
             "仕事/議事録.md": "# 定例\n\nリリースは来週。\n"}
    for name, text in notes.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([docs])
    with Store(db, read_only=True) as store:
        everything = {Path(r.path).name: r for r in search(SqlRanker(store), embedder, "データベースの復旧", 10)}
        filtered = search(SqlRanker(store), embedder, "データベースの復旧", 10, make_filters(["個人/"]))
        resident = ResidentIndex().refresh(store)  # the arrays, as the CLI and the app weigh with them
        weighed = search(SqlRanker(store), embedder, "データベースの復旧", 10, make_filters(["個人/"]),
                         everywhere_ranker=resident)
    assert [(r.path, r.confidence) for r in weighed] == [(r.path, r.confidence) for r in filtered]
    assert {Path(r.path).parent.name for r in filtered} == {"個人"} and len(filtered) == 3
    assert [(r.confidence, r.likely) for r in filtered] == [(everything[Path(r.path).name].confidence,
                                                            everything[Path(r.path).name].likely) for r in filtered]
    assert not any(r.likely for r in filtered)


def test_a_question_in_capitals_is_read_as_in_lower_case(tmp_path: Path, embedder) -> None:
    """The embedding model is cased: a user trial's WHAT'S THE WIFI PASSWORD found its answer at
    0.23, against 0.89 typed in lower case. Names and acronyms, and any query with a lower-case
    or a non-Latin letter, are read as typed."""
    from oboyu.text import calm_capitals

    assert calm_capitals("WHAT'S THE WIFI PASSWORD") == "what's the wifi password"
    for typed in ("NISA", "HR VISA", "LANG と LC_ALL の違い", "What's the WiFi password", "2024 年"):
        assert calm_capitals(typed) == typed
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "office.md").write_text("# Office info\n\n## Wi-Fi\n\nNetwork: ACME-Guest\nPassword: sakura-2024-blue\n",
                                     encoding="utf-8")
    (notes / "hints.txt").write_text("Not actual passwords, just hints. Bank: usual pattern + year.\n", encoding="utf-8")
    (notes / "bread.md").write_text("# Banana bread\n\nBake at 175 degrees for 50 minutes.\n", encoding="utf-8")
    db = tmp_path / "index.duckdb"
    Indexer(IndexFile(db), embedder).index([notes])
    with Store(db, read_only=True) as store:
        shouted, typed = (search(SqlRanker(store), embedder, q, 3) for q in ("WHAT'S THE WIFI PASSWORD",
                                                                              "what's the wifi password"))
    assert [(r.path, r.confidence) for r in shouted] == [(r.path, r.confidence) for r in typed]


def test_a_likely_result_far_surer_than_the_one_above_goes_above_it() -> None:
    """Three user trials read 0.055 first and 0.282 second as a mistake. A likely result (at or
    over the good-match line) five times as sure as the one above it goes above it; one under the
    line, or less than five times as sure, stays where fusion put it."""
    from oboyu.search.query import surer_first

    judge = replace(model_for(None, Mode.HYBRID), threshold=0.03)
    confidences = {"a": 0.055, "b": 0.282, "c": 0.02, "d": 0.6, "e": 0.025, "f": 0.11}
    chosen = [(cid, 1.0 - i / 10) for i, cid in enumerate(confidences)]
    judges = dict.fromkeys(confidences, judge)
    order = [cid for cid, _ in surer_first(chosen, judges, confidences)]
    # b (5.1 times a) passes a; d passes c (30 times) and a (11 times), not b (2.1 times); e is
    # under the line; f (4.4 times e) stays
    assert order == ["b", "d", "a", "c", "e", "f"]
