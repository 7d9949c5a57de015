import Foundation
import Testing
import XMLQuery

@Suite struct FormExtractionTests {
    let pageURL = URL(string: "https://example.com/account/login?next=%2Fhome")!

    @Test func loginFormWithHiddenFieldsAndRelativeAction() throws {
        let html = """
            <html><body>
            <form id="search" action="/search"><input name="q" value="x"></form>
            <form id="login" method="POST" action="session">
              <input type="hidden" name="csrf" value="abc123">
              <input name="username">
              <input type="password" name="password" value="">
              <input type="submit" name="commit" value="Sign in">
              <button name="go" value="1">Go</button>
              <input type="image" name="img" src="x.png">
              <input type="reset" name="reset">
            </form></body></html>
            """
        let form = try Document.html(html, url: pageURL).form("//form[@id='login']")
        #expect(form.action.absoluteString == "https://example.com/account/session")
        #expect(form.method == "POST")
        #expect(form.encoding == HTMLForm.urlEncoded)
        #expect(form.fields.map(\.name) == ["csrf", "username", "password"])
        #expect(form.value(of: "csrf") == "abc123")
        #expect(form.value(of: "username") == "")
    }

    @Test func missingActionAndMethodMeanThisPageAndGET() throws {
        let form = try Document.html("<form><input name=a value=1></form>").form("//form", pageURL: pageURL)
        #expect(form.action == pageURL)
        #expect(form.method == "GET")
    }

    @Test func baseElementChangesRelativeActions() throws {
        let html = "<html><head><base href='https://cdn.example.net/app/'></head><body><form action='go'></form></body></html>"
        let form = try Document.html(html, url: pageURL).form("//form")
        #expect(form.action.absoluteString == "https://cdn.example.net/app/go")
    }

    @Test func checkboxesRadiosSelectsAndTextareas() throws {
        let html = """
            <form id=f>
              <input type=checkbox name=remember checked>
              <input type=checkbox name=news value=yes>
              <input type=checkbox name=tags value=a checked><input type=checkbox name=tags value=b checked>
              <input type=radio name=plan value=free><input type=radio name=plan value=pro checked>
              <select name=country><option value=fr>France<option value=de selected>Germany</select>
              <select name=lang><option>  English
                 (UK) </option><option>French</option></select>
              <select name=multi multiple><option selected>x<option>y<option selected value=z1>z</select>
              <select name=none multiple><option>x</select>
              <select name=grouped><optgroup label=g disabled><option>a</optgroup><option>b</select>
              <textarea name=note>
            line one
            line two</textarea>
            </form>
            """
        let form = try Document.html(html, url: pageURL).form("//form[@id='f']")
        let pairs = form.fields.map { "\($0.name)=\($0.value)" }
        #expect(pairs == [
            "remember=on", "tags=a", "tags=b", "plan=pro", "country=de", "lang=English (UK)", "multi=x",
            "multi=z1", "grouped=b", "note=line one\r\nline two",
        ])
    }

    @Test func disabledControlsAndFieldsetsAreSkipped() throws {
        let html = """
            <form>
              <input name=a value=1 disabled>
              <fieldset disabled>
                <legend><input name=inLegend value=kept></legend>
                <input name=b value=2>
              </fieldset>
              <select name=s><option disabled selected>x<option>y</select>
              <input name=c value=3>
              <input value=unnamed>
            </form>
            """
        let form = try Document.html(html, url: pageURL).form("//form")
        #expect(form.fields.map { "\($0.name)=\($0.value)" } == ["inLegend=kept", "c=3"])
    }

    @Test func controlsAssociatedByFormAttribute() throws {
        let html = """
            <form id=main action=/x><input name=inside value=1><input name=elsewhere form=other value=2></form>
            <input name=outside form=main value=3>
            <form id=other></form>
            """
        let form = try Document.html(html, url: pageURL).form("//form[@id='main']")
        #expect(form.fields.map(\.name) == ["inside", "outside"])
    }

    @Test func overridesReplaceOrAppend() throws {
        var form = try Document.html("<form><input name=a value=1><input name=a value=2><input name=b></form>")
            .form("//form", pageURL: pageURL)
        form.set("a", to: "x")
        form.set("c", to: "y")
        #expect(form.fields.map { "\($0.name)=\($0.value)" } == ["a=x", "b=", "c=y"])
    }

    @Test func selectingSomethingElseIsAnError() throws {
        let document = try Document.html("<form id=f><input name=a></form>", url: pageURL)
        #expect {
            _ = try document.form("//form[@id='missing']")
        } throws: { error in
            (error as? XMLQueryError)?.kind == .formNotFound
        }
        #expect {
            _ = try document.form("//input")
        } throws: { error in
            guard let error = error as? XMLQueryError else { return false }
            return error.kind == .formNotFound && error.message.contains("<input>")
        }
    }

    @Test func noPageURLIsAnError() throws {
        #expect(throws: XMLQueryError.self) {
            _ = try Document.html("<form></form>").form("//form")
        }
    }
}
