from oboyu.documents.keywords import stem, words


def test_japanese_words_drop_particles_and_use_dictionary_forms() -> None:
    assert words("東京都渋谷区で開かれた勉強会では、ベクトル検索を議論した。") == [
        "東京", "都", "渋谷", "区", "開く", "勉強", "会", "べくとる", "検索", "議論", "する",  # katakana folded
    ]


def test_single_kanji_and_full_width_forms() -> None:
    assert words("猫") == ["猫"]
    assert words("ＰＹＴＨＯＮの設定") == ["python", "設定"]  # NFKC and lower-case


def test_english_stemming_and_mixed_text() -> None:
    assert words("Indexing indexed indexes: the index!") == ["index", "index", "index", "the", "index"]
    assert words("gitのcommitを修正する") == ["git", "commit", "修正", "する"]
    assert [stem(w) for w in ("running", "passes", "status")] == ["run", "pass", "status"]
    assert stem("queries") == stem("query")
    # a user trial: "meetings" missed the note's "meeting", and "notes" met "not"
    assert len({stem(w) for w in ("meeting", "meetings", "meet")}) == 1
    assert stem("notes") == stem("note") != stem("not")
    assert stem("renewal") == stem("renewing") and stem("passwords") == stem("password")


def test_a_querys_english_function_words_are_not_its_terms() -> None:
    """A user trial: "how to file taxes in Germany" found docker.txt by "to" and "in" in keyword
    mode. Passages keep the words; a query of nothing else keeps them too."""
    from oboyu.documents.keywords import query_words, term_counts

    assert query_words("How to file taxes in Germany?") == [stem("file"), stem("taxes"), stem("germany")]
    assert query_words("the who") == ["the", "who"]
    assert query_words("会議の議事録をまとめる方法") == words("会議の議事録をまとめる方法")
    assert term_counts("how to file it")[stem("to")] == 1


def test_latin_words_joined_by_hyphens_are_also_one_word() -> None:
    """A Japanese note's Wi-Fi was not found by wifi, WiFi or ワイファイ (MeCab splits it at the
    hyphen), nor e-mail by email. The parts stay, so that apt get still finds apt-get."""
    from oboyu.documents.keywords import match_spans, term_counts

    assert words("Wi-Fiのパスワード") == ["wi", "fi", "wifi", "ぱすわーど"]
    assert words("ＷＩ－ＦＩ") == ["wi", "fi", "wifi"]  # full width, as NFKC reads it
    assert {"wifi"} <= set(words("WiFi")) and {"wifi"} <= set(words("ワイファイ"))
    assert stem("email") in words("e-mail") and words("apt-get")[:2] == ["apt", "get"]
    assert words("foo - bar") == ["foo", "bar"]  # a dash between spaced words joins nothing
    # snake_case: a trial's MAX_RETRIES met every "max" and "retries"; now it also meets maxRetries
    assert words("MAX_RETRIES") == ["max", stem("retries"), stem("maxretries")] == words("max_retries")
    assert words("maxRetries") == [stem("maxretries")] and words("__init__") == ["init"]
    assert words("Wi-Fi設定") == ["wi", "fi", "wifi", "設定"]
    assert term_counts("Wi-Fi と Wi-Fi")["wifi"] == 2
    # the highlight covers the whole compound, wherever the query's wifi came from
    assert match_spans("家のWi-Fiは", {"wifi"}) == [(2, 7)]


def test_a_one_kanji_word_is_marked_only_beside_another_match() -> None:
    """A user trial: 日 of "前の日" was marked in 6月18日 and 6月14日, 代 of タクシー代 in 書籍代."""
    from oboyu.documents.keywords import match_spans, query_words

    def marked(text: str, query: str) -> list[str]:
        return [text[a:b] for a, b in match_spans(text, set(query_words(query)))]

    assert marked("費目: 書籍代 | 費目: タクシー代", "タクシー代は精算できる？") == ["タクシー代"]
    assert marked("健診は6月18日です。前の晩から食べないこと。", "健診の前の日は何時から食べちゃだめ？") == ["健診", "食べ"]
    assert marked("猫が好き。犬も。", "猫") == ["猫"]  # a query of one-kanji words marks them


def test_threads_that_come_and_go_share_the_taggers() -> None:
    """`oboyu serve` answers each handed-off query in a thread of its own; a tagger kept per thread
    left its dictionary mapped for good (fugashi never unmaps it: 3.8 GB after 145 queries, a user trial)."""
    import sys
    import threading

    from oboyu.documents.keywords import TAGGERS

    def mapped_dictionaries() -> int:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            return sum("sys.dic" in line for line in maps)

    words("テスト")
    before = TAGGERS.idle, mapped_dictionaries() if sys.platform == "linux" else 0
    for n in range(12):
        thread = threading.Thread(target=words, args=(f"予定 {n} の会議の議事録",))
        thread.start()
        thread.join()
    assert TAGGERS.idle == before[0]
    if sys.platform == "linux":
        assert mapped_dictionaries() == before[1]
    # threads at once each hold their own, and give it back
    barrier = threading.Barrier(3)

    def together() -> None:
        barrier.wait()
        words("同時に解析する文")

    threads = [threading.Thread(target=together) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert before[0] <= TAGGERS.idle <= before[0] + 3
