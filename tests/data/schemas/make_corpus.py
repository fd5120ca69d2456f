#!/usr/bin/env python3
"""tests/data/schemas/make_corpus.py — writes the JSON schema corpus (NAME.json = {"schema", "valid",
"invalid", "prompt"}) and checks every instance against its schema with Python's jsonschema (valid ones
must validate, invalid ones must not). Run from anywhere: python3 tests/data/schemas/make_corpus.py.
The schemas are small enough for a 0.5B model to fill within ~300 tokens (bounded strings and arrays)."""
import json
import os
import sys

import jsonschema

S = {}


def case(name, schema, valid, invalid, prompt):
    S[name] = {"schema": schema, "valid": valid, "invalid": invalid, "prompt": prompt}


def s(max_len=40, **kw):
    d = {"type": "string", "maxLength": max_len}
    d.update(kw)
    return d


case("flat_person",
     {"type": "object", "properties": {"name": s(), "age": {"type": "integer", "minimum": 0, "maximum": 150}},
      "required": ["name", "age"]},
     [{"name": "Ada", "age": 36}, {"name": "", "age": 0}, {"name": "Bob", "age": 150}],
     [{"name": "Ada"}, {"name": "Ada", "age": -1}, {"name": "Ada", "age": 151}, {"name": 3, "age": 3}, []],
     "Describe a fictional person with a name and an age, as JSON.")

case("flat_all_types",
     {"type": "object",
      "properties": {"text": s(20), "count": {"type": "integer"}, "ratio": {"type": "number"},
                     "flag": {"type": "boolean"}, "nothing": {"type": "null"}},
      "required": ["text", "count", "ratio", "flag", "nothing"]},
     [{"text": "hi", "count": -4, "ratio": 0.25, "flag": True, "nothing": None},
      {"text": "x", "count": 0, "ratio": -1.5e3, "flag": False, "nothing": None}],
     [{"text": "hi", "count": 1.5, "ratio": 0.25, "flag": True, "nothing": None},
      {"text": "hi", "count": 1, "ratio": "0.25", "flag": True, "nothing": None},
      {"text": "hi", "count": 1, "ratio": 0.25, "flag": "true", "nothing": None}],
     "Give an example record with a short text, a count, a ratio, a flag and a null field.")

case("nested_address",
     {"type": "object",
      "properties": {"name": s(),
                     "address": {"type": "object",
                                 "properties": {"street": s(), "city": s(),
                                                "zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
                                 "required": ["street", "city", "zip"]}},
      "required": ["name", "address"]},
     [{"name": "Ann", "address": {"street": "1 Main St", "city": "Springfield", "zip": "12345"}}],
     [{"name": "Ann", "address": {"street": "1 Main St", "city": "Springfield", "zip": "1234"}},
      {"name": "Ann", "address": {"street": "1 Main St", "city": "Springfield"}},
      {"name": "Ann", "address": "1 Main St"}],
     "Give a person's name and postal address (street, city, 5-digit zip) as JSON.")

case("array_tags",
     {"type": "object", "properties": {"tags": {"type": "array", "items": s(15), "minItems": 1, "maxItems": 5}},
      "required": ["tags"]},
     [{"tags": ["a"]}, {"tags": ["red", "green", "blue", "cyan", "pink"]}],
     [{"tags": []}, {"tags": ["a", "b", "c", "d", "e", "f"]}, {"tags": [1]}],
     "List up to five tags for a blog post about cooking, as JSON.")

case("array_numbers_minmax",
     {"type": "object",
      "properties": {"values": {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 4}},
      "required": ["values"]},
     [{"values": [1, 2]}, {"values": [1.5, -2, 3e2, 0]}],
     [{"values": [1]}, {"values": [1, 2, 3, 4, 5]}, {"values": [1, "2"]}],
     "Give two to four temperature readings as a JSON object with a values array.")

case("enum_color",
     {"type": "object", "properties": {"color": {"type": "string", "enum": ["red", "green", "blue"]}},
      "required": ["color"]},
     [{"color": "red"}, {"color": "blue"}],
     [{"color": "yellow"}, {"color": "Red"}, {}],
     "What colour is the sky on a clear day? Answer as JSON with a color field.")

case("enum_mixed",
     {"type": "object", "properties": {"level": {"enum": ["low", 1, True, None]}}, "required": ["level"]},
     [{"level": "low"}, {"level": 1}, {"level": True}, {"level": None}],
     [{"level": "high"}, {"level": 2}, {"level": False}],
     "Pick a level (low, 1, true or null) and answer as JSON.")

case("const_version",
     {"type": "object", "properties": {"version": {"const": "1.0"}, "kind": {"const": 3}, "name": s(20)},
      "required": ["version", "kind", "name"]},
     [{"version": "1.0", "kind": 3, "name": "x"}],
     [{"version": "1.1", "kind": 3, "name": "x"}, {"version": "1.0", "kind": 4, "name": "x"}],
     "Write a JSON manifest with version 1.0, kind 3 and a short name.")

case("anyof_string_or_int",
     {"type": "object", "properties": {"id": {"anyOf": [s(12), {"type": "integer"}]}}, "required": ["id"]},
     [{"id": "abc"}, {"id": 42}],
     [{"id": 4.5}, {"id": None}, {"id": ["a"]}],
     "Give an identifier for a library book as JSON with an id field.")

case("oneof_shapes",
     {"type": "object",
      "properties": {"shape": {"oneOf": [
          {"type": "object", "properties": {"kind": {"const": "circle"}, "radius": {"type": "number", "minimum": 0}},
           "required": ["kind", "radius"], "additionalProperties": False},
          {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number", "minimum": 0}},
           "required": ["kind", "side"], "additionalProperties": False}]}},
      "required": ["shape"]},
     [{"shape": {"kind": "circle", "radius": 2.5}}, {"shape": {"kind": "square", "side": 3}}],
     [{"shape": {"kind": "circle", "side": 3}}, {"shape": {"kind": "triangle", "side": 3}},
      {"shape": {"kind": "circle", "radius": -1}}],
     "Describe one geometric shape (a circle with a radius or a square with a side) as JSON.")

case("ref_defs",
     {"type": "object",
      "properties": {"home": {"$ref": "#/$defs/Address"}, "work": {"$ref": "#/$defs/Address"}},
      "required": ["home"],
      "$defs": {"Address": {"type": "object", "properties": {"city": s(30), "country": s(30)},
                            "required": ["city", "country"]}}},
     [{"home": {"city": "Paris", "country": "France"}},
      {"home": {"city": "Oslo", "country": "Norway"}, "work": {"city": "Bergen", "country": "Norway"}}],
     [{"work": {"city": "Paris", "country": "France"}}, {"home": {"city": "Paris"}}],
     "Give a home address (city and country) and optionally a work address, as JSON.")

case("ref_definitions",
     {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
      "properties": {"owner": {"$ref": "#/definitions/person"}, "pet": {"$ref": "#/definitions/pet"}},
      "required": ["owner", "pet"],
      "definitions": {"person": {"type": "object", "properties": {"name": s(30)}, "required": ["name"]},
                      "pet": {"type": "object", "properties": {"name": s(30), "species": {"enum": ["cat", "dog"]}},
                              "required": ["name", "species"]}}},
     [{"owner": {"name": "Sam"}, "pet": {"name": "Rex", "species": "dog"}}],
     [{"owner": {"name": "Sam"}, "pet": {"name": "Rex", "species": "fish"}}, {"owner": {"name": "Sam"}}],
     "Name a pet owner and their cat or dog, as JSON.")

case("recursive_tree",
     {"$ref": "#/$defs/node",
      "$defs": {"node": {"type": "object",
                         "properties": {"name": s(10),
                                        "children": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                                     "maxItems": 2}},
                         "required": ["name", "children"]}}},
     [{"name": "root", "children": []},
      {"name": "a", "children": [{"name": "b", "children": []}, {"name": "c", "children": [{"name": "d", "children": []}]}]}],
     [{"name": "root"}, {"name": "a", "children": [{"name": "b"}]},
      {"name": "a", "children": [{"name": "b", "children": []}, {"name": "c", "children": []}, {"name": "d", "children": []}]}],
     "Describe a tiny family tree (a root with at most two children, each with an empty children list) as JSON.")

case("recursive_list",
     {"$defs": {"item": {"type": "object",
                         "properties": {"value": {"type": "integer"},
                                        "next": {"anyOf": [{"$ref": "#/$defs/item"}, {"type": "null"}]}},
                         "required": ["value", "next"]}},
      "$ref": "#/$defs/item"},
     [{"value": 1, "next": None}, {"value": 1, "next": {"value": 2, "next": None}}],
     [{"value": 1}, {"value": 1, "next": {"value": "2", "next": None}}],
     "Write the linked list 1 -> 2 -> 3 as nested JSON objects with value and next fields.")

case("format_date",
     {"type": "object", "properties": {"event": s(30), "date": {"type": "string", "format": "date"}},
      "required": ["event", "date"]},
     [{"event": "launch", "date": "2024-05-17"}],
     [{"event": "launch", "date": 20240517}, {"event": "launch"}],
     "When did the first Moon landing happen? Answer as JSON with event and date (YYYY-MM-DD).")

case("format_time",
     {"type": "object", "properties": {"alarm": {"type": "string", "format": "time"}}, "required": ["alarm"]},
     [{"alarm": "07:30:00Z"}, {"alarm": "23:59:59.123+02:00"}],
     [{"alarm": 730}, {}],
     "Set an alarm for half past seven in the morning, as JSON with an alarm time (HH:MM:SSZ).")

case("format_datetime",
     {"type": "object", "properties": {"created": {"type": "string", "format": "date-time"}, "title": s(30)},
      "required": ["created", "title"]},
     [{"created": "2023-01-02T03:04:05Z", "title": "note"}],
     [{"created": None, "title": "note"}, {"title": "note"}],
     "Create a note with a title and its creation timestamp (ISO 8601) as JSON.")

case("format_uuid",
     {"type": "object", "properties": {"id": {"type": "string", "format": "uuid"}, "label": s(20)},
      "required": ["id", "label"]},
     [{"id": "123e4567-e89b-12d3-a456-426614174000", "label": "x"}],
     [{"id": 5, "label": "x"}, {"label": "x"}],
     "Make up a record with a UUID id and a short label, as JSON.")

case("string_lengths",
     {"type": "object", "properties": {"code": {"type": "string", "minLength": 2, "maxLength": 8}},
      "required": ["code"]},
     [{"code": "ab"}, {"code": "abcdefgh"}, {"code": "é€"}],
     [{"code": "a"}, {"code": "abcdefghi"}, {"code": ""}],
     "Invent a product code of 2 to 8 characters, as JSON with a code field.")

case("integer_bounds",
     {"type": "object", "properties": {"rating": {"type": "integer", "minimum": 1, "maximum": 10}},
      "required": ["rating"]},
     [{"rating": 1}, {"rating": 7}, {"rating": 10}],
     [{"rating": 0}, {"rating": 11}, {"rating": 5.5}, {"rating": -3}],
     "Rate the movie Inception from 1 to 10 as JSON with a rating field.")

case("integer_negative_bounds",
     {"type": "object", "properties": {"depth": {"type": "integer", "minimum": -20, "maximum": -5}},
      "required": ["depth"]},
     [{"depth": -5}, {"depth": -20}, {"depth": -13}],
     [{"depth": -4}, {"depth": -21}, {"depth": 0}, {"depth": 5}],
     "Give a diving depth between -20 and -5 metres as JSON with a depth field.")

case("integer_exclusive",
     {"type": "object", "properties": {"percent": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}},
      "required": ["percent"]},
     [{"percent": 1}, {"percent": 99}, {"percent": 50}],
     [{"percent": 0}, {"percent": 100}, {"percent": 150}],
     "What percentage of Earth's surface is water? Answer as JSON with a percent field.")

case("number_bounds",
     {"type": "object", "properties": {"probability": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["probability"]},
     [{"probability": 0}, {"probability": 0.75}, {"probability": 1}, {"probability": 1.0}],
     [{"probability": 1.5}, {"probability": -0.1}, {"probability": 2}],
     "What is the probability of a fair coin landing heads? Answer as JSON with a probability field.")

case("number_exclusive",
     {"type": "object", "properties": {"price": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000}},
      "required": ["price"]},
     [{"price": 0.5}, {"price": 999.99}, {"price": 1000}],
     [{"price": 0}, {"price": -2}, {"price": 1000.5}],
     "Give the price of a cup of coffee in dollars as JSON with a price field.")

case("pattern_phone",
     {"type": "object", "properties": {"phone": {"type": "string", "pattern": "^\\d{3}-\\d{4}$"}},
      "required": ["phone"]},
     [{"phone": "555-1234"}],
     [{"phone": "5551234"}, {"phone": "55-12345"}, {"phone": "abc-defg"}],
     "Give a 7-digit phone number written like 555-1234, as JSON with a phone field.")

case("pattern_code",
     {"type": "object", "properties": {"sku": {"type": "string", "pattern": "^[A-Z]{2}[0-9]{2,4}$"}},
      "required": ["sku"]},
     [{"sku": "AB12"}, {"sku": "XY1234"}],
     [{"sku": "A12"}, {"sku": "ab12"}, {"sku": "AB12345"}],
     "Invent a stock code of two capital letters and 2 to 4 digits, as JSON with a sku field.")

case("pattern_prefix",
     {"type": "object", "properties": {"ref": {"type": "string", "pattern": "^item-[0-9]+"}}, "required": ["ref"]},
     [{"ref": "item-7"}, {"ref": "item-12 extra"}],
     [{"ref": "item-"}, {"ref": "thing-7"}],
     "Give an inventory reference starting with item- followed by a number, as JSON with a ref field.")

case("pattern_alternation",
     {"type": "object", "properties": {"animal": {"type": "string", "pattern": "^(cat|dog|bird)s?$"}},
      "required": ["animal"]},
     [{"animal": "cat"}, {"animal": "dogs"}, {"animal": "bird"}],
     [{"animal": "cow"}, {"animal": "catss"}, {"animal": "Cat"}],
     "Name a common pet (cat, dog or bird) as JSON with an animal field.")

case("optional_fields",
     {"type": "object",
      "properties": {"title": s(30), "subtitle": s(30), "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
                     "isbn": s(20)},
      "required": ["title"]},
     [{"title": "Dune"}, {"title": "Dune", "year": 1965}, {"title": "Dune", "subtitle": "x", "isbn": "y"},
      {"title": "Dune", "subtitle": "x", "year": 1965, "isbn": "y"}],
     [{"subtitle": "x"}, {"title": "Dune", "year": 1800}, {"title": "Dune", "year": "1965"}],
     "Give a book's title and, if you know them, its subtitle, year and ISBN, as JSON.")

case("all_optional",
     {"type": "object", "properties": {"a": {"type": "integer"}, "b": s(10), "c": {"type": "boolean"}}},
     [{}, {"a": 1}, {"b": "x"}, {"c": False}, {"a": 1, "c": True}, {"a": 1, "b": "x", "c": True}],
     [{"a": "1"}, {"b": 2}, []],
     "Fill in any of the fields a (an integer), b (a short string) and c (a boolean), as JSON.")

case("additional_false",
     {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"],
      "additionalProperties": False},
     [{"x": 1, "y": 2}, {"x": -0.5, "y": 1e3}],
     [{"x": 1, "y": 2, "z": 3}, {"x": 1}],
     "Give the coordinates of a point as JSON with x and y.")

case("additional_true",
     {"type": "object", "properties": {"name": s(20)}, "required": ["name"], "additionalProperties": True},
     [{"name": "n"}, {"name": "n", "extra": 1}, {"name": "n", "a": [1], "b": {"c": None}}],
     [{"extra": 1}, {"name": 5}],
     "Describe a city with a name and any other facts you like, as JSON.")

case("additional_schema",
     {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100}},
     [{}, {"math": 90, "art": 75}],
     [{"math": 101}, {"math": "A"}],
     "Give exam scores (0-100) for three school subjects as a JSON object mapping subject to score.")

case("additional_with_props",
     {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"],
      "additionalProperties": {"type": "string", "maxLength": 10}},
     [{"total": 3}, {"total": 3, "a": "x", "b": "y"}],
     [{"total": 3, "a": 1}, {"a": "x"}, {"total": "3"}],
     "Give a total count and a few named notes as JSON.")

case("type_array_nullable",
     {"type": "object", "properties": {"nickname": {"type": ["string", "null"], "maxLength": 20},
                                       "age": {"type": ["integer", "null"]}},
      "required": ["nickname", "age"]},
     [{"nickname": None, "age": None}, {"nickname": "Al", "age": 3}],
     [{"nickname": 1, "age": None}, {"nickname": "Al", "age": "3"}, {"nickname": "Al"}],
     "Give a person's nickname and age (either may be null) as JSON.")

case("pydantic_joke",
     {"description": "Joke to tell user.", "properties": {
         "setup": {"description": "The setup of the joke", "title": "Setup", "type": "string", "maxLength": 120},
         "punchline": {"description": "The punchline to the joke", "title": "Punchline", "type": "string", "maxLength": 120},
         "rating": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None,
                    "description": "How funny the joke is, from 1 to 10", "title": "Rating"}},
      "required": ["setup", "punchline"], "title": "Joke", "type": "object"},
     [{"setup": "Why?", "punchline": "Because.", "rating": 7}, {"setup": "Why?", "punchline": "Because."},
      {"setup": "Why?", "punchline": "Because.", "rating": None}],
     [{"setup": "Why?"}, {"setup": "Why?", "punchline": "Because.", "rating": "7"}],
     "Tell me a joke about cats.")

case("pydantic_nested_defs",
     {"$defs": {"Pet": {"properties": {"name": {"title": "Name", "type": "string", "maxLength": 30},
                                       "animal": {"title": "Animal", "type": "string", "maxLength": 30},
                                       "age": {"title": "Age", "type": "integer", "minimum": 0, "maximum": 50},
                                       "color": {"anyOf": [{"type": "string", "maxLength": 20}, {"type": "null"}],
                                                 "title": "Color"},
                                       "favorite_toy": {"anyOf": [{"type": "string", "maxLength": 30}, {"type": "null"}],
                                                        "title": "Favorite Toy"}},
                        "required": ["name", "animal", "age", "color", "favorite_toy"], "title": "Pet", "type": "object"}},
      "properties": {"pets": {"items": {"$ref": "#/$defs/Pet"}, "title": "Pets", "type": "array", "maxItems": 3}},
      "required": ["pets"], "title": "PetList", "type": "object"},
     [{"pets": [{"name": "Luna", "animal": "cat", "age": 5, "color": "grey", "favorite_toy": "yarn"},
                {"name": "Loki", "animal": "cat", "age": 2, "color": None, "favorite_toy": None}]}],
     [{"pets": [{"name": "Luna", "animal": "cat", "age": 5}]}, {"pets": {}}],
     "I have two cats named Luna and Loki. Luna is 5 and grey and loves yarn; Loki is 2. Describe my pets as JSON.")

case("typeddict_movie",
     {"description": "A movie.", "properties": {
         "title": {"description": "The movie's title", "type": "string", "maxLength": 60},
         "year": {"description": "Release year", "type": "integer", "minimum": 1880, "maximum": 2030},
         "genres": {"description": "Genres", "items": {"type": "string", "maxLength": 20}, "type": "array", "maxItems": 3}},
      "required": ["title", "year", "genres"], "title": "Movie", "type": "object"},
     [{"title": "Alien", "year": 1979, "genres": ["horror", "sci-fi"]}],
     [{"title": "Alien", "year": 1779, "genres": []}, {"title": "Alien", "genres": []}],
     "Tell me about the movie Alien (title, year, genres) as JSON.")

case("ollama_docs_country",
     {"type": "object",
      "properties": {"name": {"type": "string", "maxLength": 40}, "capital": {"type": "string", "maxLength": 40},
                     "languages": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 4}},
      "required": ["name", "capital", "languages"]},
     [{"name": "Canada", "capital": "Ottawa", "languages": ["English", "French"]}],
     [{"name": "Canada", "capital": "Ottawa"}, {"name": "Canada", "capital": "Ottawa", "languages": "English"}],
     "Tell me about Canada.")

case("ollama_docs_friends",
     {"type": "object",
      "properties": {"friends": {"type": "array", "maxItems": 3, "items": {
          "type": "object", "properties": {"name": s(20), "age": {"type": "integer", "minimum": 0, "maximum": 120},
                                           "is_available": {"type": "boolean"}},
          "required": ["name", "age", "is_available"]}}},
      "required": ["friends"]},
     [{"friends": [{"name": "Ana", "age": 22, "is_available": True}]}],
     [{"friends": [{"name": "Ana", "age": 22}]}, {"friends": [{"name": "Ana", "age": "22", "is_available": True}]}],
     "I have two friends. The first is Ollama 22 years old busy saving the world, and the second is Alonso 23 years old and wants to hang out. Return a list of friends in JSON format.")

case("deeply_nested",
     {"type": "object", "properties": {"l1": {"type": "object", "properties": {"l2": {"type": "object", "properties": {
         "l3": {"type": "object", "properties": {"l4": {"type": "object", "properties": {"l5": {"type": "object",
             "properties": {"value": {"type": "string", "maxLength": 10}}, "required": ["value"]}},
             "required": ["l5"]}}, "required": ["l4"]}}, "required": ["l3"]}}, "required": ["l2"]}},
      "required": ["l1"]},
     [{"l1": {"l2": {"l3": {"l4": {"l5": {"value": "deep"}}}}}}],
     [{"l1": {"l2": {"l3": {"l4": {"l5": {}}}}}}, {"l1": {"l2": {"l3": {"l4": {}}}}}],
     "Fill in the nested object l1.l2.l3.l4.l5.value with the word deep, as JSON.")

case("allof_merge",
     {"allOf": [{"type": "object", "properties": {"id": {"type": "integer", "minimum": 1, "maximum": 9999}},
                 "required": ["id"]},
                {"type": "object", "properties": {"label": s(20)}, "required": ["label"]}]},
     [{"id": 1, "label": "a"}],
     [{"id": 1}, {"label": "a"}, {"id": 0, "label": "a"}],
     "Give a record with a numeric id and a short label, as JSON.")

case("allof_single_ref",
     {"title": "Order", "type": "object",
      "properties": {"status": {"allOf": [{"$ref": "#/definitions/Status"}], "description": "The order status"},
                     "quantity": {"type": "integer", "minimum": 1, "maximum": 99}},
      "required": ["status", "quantity"],
      "definitions": {"Status": {"title": "Status", "enum": ["pending", "shipped", "delivered"], "type": "string"}}},
     [{"status": "shipped", "quantity": 2}],
     [{"status": "lost", "quantity": 2}, {"status": "shipped", "quantity": 0}],
     "An order of 2 books has been shipped. Describe the order as JSON with status and quantity.")

case("tuple_prefixitems",
     {"type": "object", "properties": {"point": {"type": "array", "prefixItems": [s(10), {"type": "integer"}],
                                                 "items": False}},
      "required": ["point"]},
     [{"point": ["a", 1]}],
     [{"point": [1, "a"]}, {"point": ["a", 1, 2]}],
     "Give a label and an integer as a two-element JSON array in a point field.")

case("array_of_objects",
     {"type": "object", "properties": {"items": {"type": "array", "minItems": 1, "maxItems": 4, "items": {
         "type": "object", "properties": {"name": s(20), "qty": {"type": "integer", "minimum": 1, "maximum": 99}},
         "required": ["name", "qty"]}}},
      "required": ["items"]},
     [{"items": [{"name": "apple", "qty": 3}]}, {"items": [{"name": "a", "qty": 1}, {"name": "b", "qty": 99}]}],
     [{"items": []}, {"items": [{"name": "apple"}]}, {"items": [{"name": "apple", "qty": 0}]}],
     "Write a shopping list of up to four items with quantities, as JSON.")

case("enum_integers",
     {"type": "object", "properties": {"stars": {"type": "integer", "enum": [1, 2, 3, 4, 5]}}, "required": ["stars"]},
     [{"stars": 1}, {"stars": 5}],
     [{"stars": 0}, {"stars": 6}, {"stars": "5"}],
     "Give a hotel a star rating from 1 to 5 as JSON with a stars field.")

case("openai_strict",
     {"type": "object", "properties": {
         "name": {"type": "string", "maxLength": 30},
         "email": {"type": ["string", "null"], "maxLength": 40},
         "tags": {"type": "array", "items": {"type": "string", "maxLength": 10}, "maxItems": 3}},
      "required": ["name", "email", "tags"], "additionalProperties": False},
     [{"name": "a", "email": None, "tags": []}, {"name": "a", "email": "a@b.c", "tags": ["x"]}],
     [{"name": "a", "email": None}, {"name": "a", "email": None, "tags": [], "extra": 1}],
     "Create a contact record with a name, an email (or null) and up to three tags, as JSON.")

case("langchain_dict_schema",
     {"title": "AnswerWithJustification", "description": "An answer to the user question along with justification for the answer.",
      "type": "object",
      "properties": {"answer": {"type": "string", "maxLength": 100}, "justification": {"type": "string", "maxLength": 200}},
      "required": ["answer", "justification"]},
     [{"answer": "They weigh the same.", "justification": "A pound is a pound."}],
     [{"answer": "x"}, {"answer": 1, "justification": "y"}],
     "What weighs more, a pound of bricks or a pound of feathers?")

case("unicode_keys",
     {"type": "object", "properties": {"café": {"type": "string", "maxLength": 10}, "two words": {"type": "boolean"}},
      "required": ["café", "two words"]},
     [{"café": "crème", "two words": True}],
     [{"cafe": "x", "two words": True}, {"café": "x"}],
     "Answer as JSON with a café field (a short drink name) and a \"two words\" boolean field.")

case("array_root",
     {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": 9}, "minItems": 3, "maxItems": 3},
     [[1, 2, 3], [0, 0, 9]],
     [[1, 2], [1, 2, 3, 4], [10, 1, 2]],
     "List three single-digit numbers as a JSON array.")

case("boolean_answer",
     {"type": "object", "properties": {"answer": {"type": "boolean"}, "confidence": {"type": "number", "minimum": 0, "maximum": 1}},
      "required": ["answer", "confidence"]},
     [{"answer": True, "confidence": 0.9}],
     [{"answer": "yes", "confidence": 0.9}, {"answer": True, "confidence": 9}],
     "Is Paris the capital of France? Answer as JSON with answer and confidence.")

case("sentiment_enum_nested",
     {"type": "object", "properties": {
         "sentiment": {"type": "string", "enum": ["positive", "negative", "neutral"]},
         "scores": {"type": "object", "properties": {"positive": {"type": "number", "minimum": 0, "maximum": 1},
                                                     "negative": {"type": "number", "minimum": 0, "maximum": 1}},
                    "required": ["positive", "negative"], "additionalProperties": False}},
      "required": ["sentiment", "scores"]},
     [{"sentiment": "positive", "scores": {"positive": 0.9, "negative": 0.1}}],
     [{"sentiment": "happy", "scores": {"positive": 0.9, "negative": 0.1}},
      {"sentiment": "positive", "scores": {"positive": 1.9, "negative": 0.1}}],
     "Classify the sentiment of 'I love this phone!' as JSON with sentiment and scores.")

if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    bad = 0
    for name, c in S.items():
        v = jsonschema.validators.validator_for(c["schema"])(c["schema"])
        for inst in c["valid"]:
            errs = list(v.iter_errors(inst))
            if errs:
                print(f"{name}: valid instance {json.dumps(inst)} fails: {errs[0].message}")
                bad += 1
        for inst in c["invalid"]:
            if v.is_valid(inst):
                print(f"{name}: invalid instance {json.dumps(inst)} validates")
                bad += 1
        with open(os.path.join(here, name + ".json"), "w", encoding="utf-8") as f:
            json.dump(c, f, indent=1, ensure_ascii=False)
            f.write("\n")
    print(f"{len(S)} schemas written, {bad} problems")
    sys.exit(1 if bad else 0)
