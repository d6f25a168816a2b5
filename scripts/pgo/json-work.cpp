// json-work.cpp - the C++ workload of scripts/pgo-bench.sh: nlohmann/json
// (Debian's nlohmann-json3-dev, header-only, so all of it is compiled with
// the bench's flags and profile) used as a service would: text made from a
// seeded generator is parsed, queried, changed, serialized (plain and
// pretty), round-tripped through CBOR and MessagePack, diffed and patched.
// Usage: json-work RECORDS SEED. Prints one checksum line per step: the
// same for every build of the same source. Owns the workload only.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

using nlohmann::json;

namespace {

struct Rng {
    uint64_t s;
    uint64_t next()
    {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        return s;
    }
};

std::string word(Rng &r)
{
    static const char *syl[] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
                                "qu", "ex", "an", "or", "is", "ul", "ze", "\\u00e9"};
    std::string w;
    for (uint64_t k = 1 + r.next() % 5; k; k--)
        w += syl[r.next() % 16];
    return w;
}

// the input text, written by hand as another program would have sent it
std::string make_text(Rng &r, int records)
{
    std::string t = "{\"version\": 3, \"records\": [";
    for (int i = 0; i < records; i++) {
        if (i)
            t += ",\n";
        t += "{\"id\": " + std::to_string(i) + ", \"name\": \"" + word(r) + " " + word(r) +
             "\", \"score\": " + std::to_string((double)(r.next() % 100000) / 7.0) +
             ", \"active\": " + (r.next() % 3 ? "true" : "false") + ", \"tags\": [";
        for (uint64_t k = r.next() % 6; k; k--)
            t += "\"" + word(r) + (k > 1 ? "\"," : "\"");
        t += "], \"geo\": {\"lat\": " + std::to_string((int64_t)(r.next() % 180000) - 90000) +
             "e-3, \"lon\": " + std::to_string((int64_t)(r.next() % 360000) - 180000) +
             "e-3}, \"parent\": " + (i && r.next() % 2 ? std::to_string(r.next() % i) : "null") +
             "}";
    }
    return t + "]}";
}

uint64_t fnv(const std::string &s)
{
    uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s)
        h = (h ^ c) * 1099511628211ull;
    return h;
}

void line(const char *tag, uint64_t n, uint64_t h)
{
    std::printf("%-8s %10llu  %016llx\n", tag, (unsigned long long)n, (unsigned long long)h);
}

// per tag: how many records carry it and their mean score
json tag_index(const json &doc)
{
    json idx = json::object();
    for (const auto &rec : doc["records"]) {
        if (!rec["active"].get<bool>())
            continue;
        for (const auto &t : rec["tags"]) {
            json &e = idx[t.get<std::string>()];
            if (e.is_null())
                e = {{"n", 0}, {"sum", 0.0}, {"ids", json::array()}};
            e["n"] = e["n"].get<int>() + 1;
            e["sum"] = e["sum"].get<double>() + rec["score"].get<double>();
            if (e["ids"].size() < 8)
                e["ids"].push_back(rec["id"]);
        }
    }
    return idx;
}

}  // namespace

int main(int argc, char **argv)
{
    if (argc != 3) {
        std::fprintf(stderr, "usage: json-work RECORDS SEED\n");
        return 2;
    }
    int records = std::atoi(argv[1]);
    Rng r{0x9e3779b97f4a7c15ull ^ std::strtoull(argv[2], nullptr, 10)};
    std::string text = make_text(r, records);
    line("text", text.size(), fnv(text));

    json doc = json::parse(text);
    line("parse", doc["records"].size(), fnv(doc.dump()));

    json idx = tag_index(doc);
    line("index", idx.size(), fnv(idx.dump()));

    for (auto &rec : doc["records"]) {
        rec["score"] = rec["score"].get<double>() * 1.5;
        rec["name"] = rec["name"].get<std::string>() + "!";
        if (!rec["parent"].is_null())
            rec["depth"] = doc["/records"_json_pointer][rec["parent"].get<size_t>()]
                               .value("depth", 0) + 1;
    }
    std::string pretty = doc.dump(2);
    line("pretty", pretty.size(), fnv(pretty));

    std::vector<uint8_t> cbor = json::to_cbor(doc), pack = json::to_msgpack(doc);
    json back = json::from_cbor(cbor), back2 = json::from_msgpack(pack);
    line("binary", cbor.size() + pack.size(), (back == doc) + 2 * (back2 == doc));

    json again = json::parse(pretty);
    json patch = json::diff(json::parse(text), again);
    line("diff", patch.size(), fnv(patch.dump()));
    line("patch", json::parse(text).patch(patch) == again, fnv(again.flatten().dump()));
    return 0;
}
